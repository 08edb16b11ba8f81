"""A synthetic, deterministic, Common-Crawl-shaped sample crawl for demos and tests (no Ray, no data).

:func:`write_sample_crawl` writes ``CC-SAMPLE-{i:05d}.warc.gz`` files (warcinfo, then
request/response/metadata per capture, like CC) plus a ``warc.paths`` manifest. Every
page is produced here by a small template grammar over built-in vocabularies: English
articles on several topics (the majority), articles in German, French, Spanish,
Russian, Chinese and Japanese in a mix of legacy charsets and declarations, spam,
boilerplate-only, very short and list-heavy pages, exact and near copies of earlier
articles, non-HTML payloads, 404s, 301 redirects and one revisit record per file.

Output bytes are a pure function of the arguments: all randomness comes from local
``random.Random`` instances seeded with strings, dates derive from the seed, and the
WARC writer is deterministic.
"""

# The vocabularies are Cyrillic and CJK on purpose (RUF001: "ambiguous" characters in strings).
# ruff: noqa: RUF001

from __future__ import annotations

import hashlib
import html
import json
import random
import re
import struct
import zlib
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

from raycorpus.demo.warcwrite import WarcWriter, crawler_rewrite_headers, gzip_member, record_id, sha1_digest

__all__ = ["SampleCrawl", "SamplePage", "write_sample_crawl"]


def _split(text: str) -> tuple[str, ...]:
    """Vocabulary lists are written as ``;``-separated strings."""
    return tuple(w.strip() for w in text.split(";") if w.strip())


# --------------------------------------------------------------------------- English vocabulary
_EN_GENERAL = {
    "person": tuple(
        f"{first} {last}"
        for first in _split(
            "Anna;James;Maria;David;Sarah;Michael;Laura;Daniel;Emma;Thomas;Olivia;Robert;Sophie;William;Grace;"
            "Peter;Helen;Samuel;Ruth;George;Alice;Henry;Clara;Joseph;Lucy;Martin;Nora;Oliver;Rachel;Simon"
        )
        for last in _split(
            "Walker;Bennett;Harris;Clarke;Morgan;Turner;Hughes;Price;Foster;Reed;Ellis;Bailey;Shaw;Porter;"
            "Hayes;Griffin;Mason;Fletcher;Barker;Holt;Warren;Lambert;Chapman;Doyle;Quinn;Fraser;Parker;Lowe"
        )
    ),
    "city": _split(
        "Bristol;Leeds;Boston;Denver;Toronto;Dublin;Edinburgh;Melbourne;Portland;Cardiff;Glasgow;"
        "Chicago;Austin;Auckland;Vancouver;Manchester;Seattle;Baltimore;Adelaide;Halifax;York;Perth"
    ),
    "time": _split(
        "every morning;on weekends;for decades;in the spring;late at night;after work;during the holidays;"
        "in winter;twice a week;at the end of each month;in the summer months;on rainy days;before dawn;"
        "every few years"
    ),
    "adv": _split(
        "carefully;slowly;quietly;often;rarely;almost always;gradually;deliberately;patiently;regularly;"
        "happily;reluctantly;openly;cautiously"
    ),
    "freq": _split("a week;a month;a year;a season;a day;every summer"),
    "num": _split("two;three;four;five;six;seven;eight;nine;ten;twelve;fifteen;twenty;thirty"),
    "year": tuple(str(y) for y in range(1890, 2024)),
    "pct": tuple(str(p) for p in range(11, 90, 3)),
}

# topic -> (agents; things; adjectives; verbs as base|past; concepts; places; roles)
_EN_TOPICS: dict[str, tuple[str, ...]] = {
    "science": (
        "researchers;scientists;graduate students;physicists;field biologists;lab technicians;astronomers;"
        "science teachers;chemists;citizen scientists",
        "experiment;telescope;microscope;data set;hypothesis;sample;theory;measurement;laboratory;fossil;"
        "satellite;climate model;research paper;particle detector;water sample;computer simulation",
        "careful;surprising;detailed;reliable;controversial;elegant;precise;ambitious;preliminary;remarkable;"
        "unexpected;rigorous",
        "test|tested;measure|measured;analyse|analysed;publish|published;review|reviewed;observe|observed;"
        "replicate|replicated;calibrate|calibrated;question|questioned;describe|described;collect|collected;"
        "compare|compared",
        "evidence;curiosity;uncertainty;peer review;funding;accuracy;patience;reproducibility;"
        "collaboration;open data",
        "in the laboratory;at the observatory;in the field;at a small university;on the research vessel;"
        "in the basement archive;at the conference;near the coast",
        "physicist;biologist;lab manager;science journalist;data analyst;research fellow",
    ),
    "cooking": (
        "home cooks;professional chefs;bakers;food writers;many families;restaurant owners;street vendors;"
        "nutritionists;culinary students;grandparents",
        "sourdough loaf;tomato sauce;cast iron pan;vegetable stew;spice blend;pie crust;chicken broth;"
        "kitchen knife;rice dish;salad dressing;recipe;lemon cake;bread dough;soup pot;family dinner;"
        "cutting board",
        "crisp;tender;savoury;fragrant;rich;delicate;golden;smoky;hearty;simple;homemade;seasonal",
        "prepare|prepared;season|seasoned;roast|roasted;simmer|simmered;taste|tasted;bake|baked;"
        "chop|chopped;stir|stirred;serve|served;adjust|adjusted;knead|kneaded;cook|cooked",
        "flavour;texture;acidity;patience;technique;timing;heat;balance;tradition;fresh produce",
        "in a busy kitchen;at the farmers market;on a quiet Sunday;in a small bakery;at the family table;"
        "in the restaurant kitchen;at a street market;in a rented cottage",
        "pastry chef;food writer;restaurant owner;cookery teacher;baker;caterer",
    ),
    "travel": (
        "travellers;backpackers;tour guides;local residents;hotel owners;families on holiday;hikers;"
        "travel writers;cyclists;first-time visitors",
        "mountain village;night train;coastal path;old harbour;guest house;market square;ferry crossing;"
        "walking route;city map;museum pass;rental car;hostel;hiking trail;travel guide;bus station;island",
        "quiet;crowded;scenic;remote;charming;affordable;windy;peaceful;historic;colourful;overlooked;busy",
        "visit|visited;explore|explored;book|booked;photograph|photographed;recommend|recommended;"
        "avoid|avoided;reach|reached;cross|crossed;discover|discovered;plan|planned;describe|described;"
        "enjoy|enjoyed",
        "hospitality;local culture;slow travel;good weather;public transport;comfort;adventure;planning;"
        "local food;tourism",
        "along the coast;in the old town;on the northern islands;in the mountains;near the border;"
        "in a fishing village;at the edge of the desert;in the river valley",
        "tour guide;travel writer;hotel manager;ferry captain;mountain guide;local historian",
    ),
    "history": (
        "historians;archivists;local historians;museum curators;archaeologists;students of history;"
        "collectors;genealogists;villagers;early settlers",
        "manuscript;town charter;old map;stone bridge;parish record;trade route;castle;letter;painting;"
        "battlefield;coin;railway line;monastery;diary;census;harbour wall",
        "ancient;forgotten;medieval;fragile;detailed;rare;important;disputed;well preserved;early;modest;"
        "influential",
        "study|studied;restore|restored;preserve|preserved;catalogue|catalogued;uncover|uncovered;"
        "examine|examined;record|recorded;date|dated;rediscover|rediscovered;translate|translated;"
        "document|documented;interpret|interpreted",
        "memory;tradition;historical context;trade;power;local identity;continuity;change;archival work;"
        "heritage",
        "in the county archive;in the old abbey;beneath the market square;at the national library;"
        "in a private collection;along the old road;in the village church;on the edge of town",
        "archivist;museum curator;historian;archaeologist;genealogist;librarian",
    ),
    "sports": (
        "players;coaches;fans;young athletes;referees;amateur runners;club members;team captains;"
        "sports scientists;supporters",
        "match;training session;season;final;home game;penalty;marathon;racket;football pitch;"
        "swimming pool;league table;game plan;warm-up;tournament;bicycle;scoreboard",
        "tense;memorable;disappointing;competitive;physical;tactical;close;dramatic;demanding;long;exciting;"
        "decisive",
        "win|won;lose|lost;play|played;watch|watched;train|trained;coach|coached;analyse|analysed;"
        "celebrate|celebrated;prepare|prepared;defend|defended;organise|organised;finish|finished",
        "teamwork;fitness;discipline;confidence;team spirit;strategy;endurance;fair play;motivation;recovery",
        "at the local stadium;on the training ground;in the final minutes;at the club house;"
        "on a muddy pitch;in front of a home crowd;at the regional championship;on the running track",
        "coach;team captain;physiotherapist;referee;club secretary;sports journalist",
    ),
    "technology": (
        "software developers;engineers;startup founders;system administrators;product designers;"
        "security researchers;students;small businesses;early adopters;hardware hackers",
        "laptop;database;smartphone;server;operating system;web browser;software update;"
        "programming language;network;battery;keyboard;mobile app;cloud service;circuit board;"
        "password manager;search engine",
        "reliable;fast;secure;expensive;outdated;flexible;open;compact;powerful;efficient;complicated;modern",
        "build|built;design|designed;test|tested;install|installed;update|updated;replace|replaced;"
        "repair|repaired;configure|configured;release|released;debug|debugged;monitor|monitored;"
        "support|supported",
        "privacy;security;performance;open source;usability;energy efficiency;automation;compatibility;"
        "documentation;maintenance",
        "in a small office;at the data centre;in a garage workshop;at the developer conference;"
        "on the factory floor;in a university lab;at a coworking space;in the server room",
        "software engineer;security researcher;product designer;system administrator;hardware engineer;"
        "technical writer",
    ),
    "gardening": (
        "gardeners;allotment holders;beekeepers;landscape designers;farmers;volunteers;plant lovers;"
        "horticulture students;neighbours;seed savers",
        "vegetable bed;compost heap;apple tree;greenhouse;tomato plant;herb garden;rose bush;hedge;"
        "watering can;flower border;raised bed;lawn;potato crop;garden shed;seed tray;pond",
        "healthy;overgrown;sunny;sheltered;productive;young;colourful;shady;neglected;well drained;hardy;"
        "fragrant",
        "plant|planted;water|watered;prune|pruned;harvest|harvested;dig|dug;sow|sowed;protect|protected;"
        "divide|divided;mulch|mulched;weed|weeded;feed|fed;grow|grew",
        "soil health;patience;biodiversity;good drainage;sunlight;crop rotation;wildlife;shade;"
        "frost protection;organic matter",
        "in the back garden;on the allotment;in the walled garden;along the south wall;"
        "in a community garden;in the greenhouse;on a small balcony;at the edge of the orchard",
        "head gardener;beekeeper;landscape designer;garden writer;nursery owner;botanist",
    ),
    "music": (
        "musicians;singers;music teachers;audiences;composers;young bands;record collectors;"
        "sound engineers;choir members;jazz fans",
        "concert;album;guitar;piano;melody;rehearsal;recording;orchestra;song;drum kit;festival;"
        "vinyl record;music school;string quartet;radio show;chord progression",
        "beautiful;loud;haunting;energetic;experimental;classic;gentle;ambitious;catchy;intimate;raw;polished",
        "record|recorded;perform|performed;compose|composed;rehearse|rehearsed;tune|tuned;arrange|arranged;"
        "release|released;play|played;hear|heard;mix|mixed;teach|taught;write|wrote",
        "rhythm;harmony;improvisation;practice;stage presence;tradition;silence;emotion;live music;"
        "musical taste",
        "in a small club;at the concert hall;in the rehearsal room;at the summer festival;"
        "in a home studio;on the radio;at the village hall;in the cathedral",
        "composer;sound engineer;music teacher;conductor;session musician;festival organiser",
    ),
    "health": (
        "doctors;nurses;patients;researchers;personal trainers;pharmacists;parents;older adults;"
        "health workers;dietitians",
        "check-up;blood test;diet;walking routine;vaccine;treatment;sleep schedule;exercise plan;clinic;"
        "medical record;prescription;waiting room;heart rate;health app;hospital ward;breakfast",
        "healthy;regular;gentle;effective;balanced;simple;daily;serious;affordable;common;moderate;thorough",
        "prescribe|prescribed;monitor|monitored;recommend|recommended;treat|treated;measure|measured;"
        "improve|improved;reduce|reduced;track|tracked;review|reviewed;follow|followed;explain|explained;"
        "schedule|scheduled",
        "sleep;stress;nutrition;hydration;mental health;prevention;routine;recovery;exercise;good habits",
        "at the local clinic;in the waiting room;at the pharmacy;in the hospital;at home;"
        "in the community centre;at the gym;on the ward",
        "general practitioner;nurse;pharmacist;dietitian;physiotherapist;public health researcher",
    ),
    "architecture": (
        "architects;builders;urban planners;residents;engineers;conservation officers;developers;"
        "students of design;homeowners;city councils",
        "town hall;apartment block;courtyard;bridge;facade;staircase;roof;library building;railway station;"
        "timber frame;brick wall;public square;tower;window;floor plan;concrete shell",
        "modern;elegant;brutal;airy;solid;ornate;sustainable;narrow;spacious;bold;restrained;weathered",
        "design|designed;build|built;renovate|renovated;demolish|demolished;restore|restored;"
        "extend|extended;insulate|insulated;sketch|sketched;inspect|inspected;convert|converted;"
        "approve|approved;admire|admired",
        "light;proportion;sustainability;public space;craftsmanship;density;comfort;natural ventilation;"
        "durability;urban design",
        "in the city centre;on the waterfront;in the old quarter;on the university campus;"
        "along the main avenue;in a former factory;near the railway;on the hillside",
        "architect;structural engineer;urban planner;conservation officer;site manager;interior designer",
    ),
}

# Sentence = [opener, ] core [, tail] + "." ; questions and quotes stand alone.
_EN_CORES = _split(
    "{agent} {verb} the {thing} {adv} when they have the chance;"
    "the {thing} is often {verbed} by {agent} who want more {concept};"
    "there is a {adj} connection between {concept} and the {thing};"
    "most of the {agent} we spoke to said the {thing} had to be {verbed} {time};"
    "{person} {verbed} a {adj} {thing} {place} in {year};"
    "{agent} easily forget how much {concept} depends on the {thing};"
    "the question of {concept} comes up whenever {agent} {verb} {a_thing};"
    "a {adj} {thing} can make all the difference for {agent} {place};"
    "{agent} tend to {verb} the {thing} first and worry about {concept} later;"
    "if you {verb} the {thing} without a plan, the {thing2} will suffer;"
    "the {adj} {thing} that {person} {verbed} {place} is still {adj2} today;"
    "{agent} have argued for years that {concept} matters more than {concept2};"
    "nobody expected the {thing} to be so {adj}, but that is what happened {place};"
    "we asked {num} {agent} what they would {verb} first, and the answers were {adj};"
    "the {thing} was finally {verbed} by a small group of {agent};"
    "{concept} is not something that can be {verbed} in a single afternoon;"
    "the {thing} and the {thing2} were {verbed} together for the first time {place};"
    "some {agent} prefer to {verb} the {thing} by hand, while others rely on {concept};"
    "there was a time when {agent} would {verb} {a_thing} {time};"
    "{person}, {a_role}, {verbed} the {thing} with {adj} results;"
    "{concept} is one reason why {agent} {verb} the {thing} {adv};"
    "the best way to understand {concept} is to {verb} {a_thing} yourself;"
    "what makes the {thing} so {adj} is the way it brings {concept} and {concept2} together;"
    "the {thing} should be {verbed} before the {thing2}, not after;"
    "{agent} who {verb} the {thing} regularly report more {concept} than those who do not;"
    "at first glance the {thing} looks {adj}, yet it hides {a_adj} kind of {concept};"
    "the {adj} {thing} was {verbed} {place} and then {verbed2} again a few weeks later;"
    "not every {thing} needs to be {verbed}, and that is good news for {agent};"
    "{person} has {verbed} {num} different versions of the {thing} over the years;"
    "for {agent}, the {thing} is less about {concept} and more about {concept2};"
    "one {adj} {thing} can easily be {verbed} in less than an hour;"
    "the story of the {thing} begins {place}, where {agent} first {verbed} it;"
    "{agent} know that {concept} alone never explains the {thing};"
    "the {thing} has become a symbol of {concept} for {agent} in {city};"
    "{agent} rarely agree {place}, but most of them value {concept};"
    "there are {num} things to check before you {verb} the {thing};"
    "the {adj} {thing} is still {verbed} the same way it was in {year};"
    "{person} remembers the day the {thing} was first {verbed} {place};"
    "a little {concept} goes a long way when you {verb} the {thing};"
    "the more {agent} {verb} the {thing}, the more they learn about {concept};"
    "without {concept}, even the most {adj} {thing} will not last;"
    "the {thing} was once considered {adj}, but that view has changed;"
    "{agent} are encouraged to {verb} the {thing} at least once {freq};"
    "this {thing} is {adj} enough for {agent} and {adj2} enough for everyone else;"
    "it took {agent} {num} years to {verb} the {thing} properly;"
    "the {thing} depends on {concept} as much as on the {thing2};"
    "{person} likes to say that the {thing} is only as good as the {thing2};"
    "you do not need an expensive {thing} to enjoy {concept};"
    "a recent survey of {agent} in {city} found that {pct} percent of them {verb} the {thing} {time};"
    "the {thing} is {verbed} {adv} and then left alone {time};"
    "{agent} often {verb} {a_thing} with {a_thing2} to get more {concept};"
    "much of the {concept} comes from the {adj} {thing} at the centre of it all;"
    "if {city} teaches one lesson, it is that {concept} cannot be rushed;"
    "the difference between a {adj} {thing} and a {adj2} one is usually {concept};"
    "{agent} were among the first to {verb} the {thing} {place};"
    "the {thing} tells us a great deal about {concept} and about the {agent} who {verbed} it;"
    "people who have never {verbed} a {thing} often underestimate the {concept} involved;"
    "the {thing} had been {verbed} long before {person} arrived {place};"
    "{agent} {verbed} the {thing} {time} and found that it was more {adj} than they expected;"
    "with enough {concept}, {agent} can {verb} almost any {thing};"
    "the old {thing} was replaced by a {adj} one in {year}, to the relief of {agent};"
    "few {agent} would {verb} the {thing} today without thinking about {concept};"
    "to {verb} {a_thing} well, you have to respect {concept} and {concept2};"
    "it is the {adj} {thing} that most {agent} remember, not the {thing2};"
    "{person} {verbs} the {thing} {time}, and the {agent} usually follow;"
    "every {role} {verbs} the {thing} a little differently"
)
_EN_OPENERS = _split(
    "in many cases;for most people;over the last few years;as a result;at the same time;on the other hand;"
    "in {year};according to {person};even so;not surprisingly;for that reason;to be fair;in practice;"
    "more often than not;by the end of the day;in the early days;since {year};for {agent};back in {year};"
    "every so often;in our experience;to put it simply;after a while;strangely enough;of course;"
    "until recently;above all;with that in mind;in {city};later that year;sooner or later;once again;"
    "despite all this;in a sense;for now;meanwhile;admittedly;interestingly;naturally;in the end"
)
_EN_TAILS = _split(
    "which is why {agent} keep coming back to it;and that is not always easy;at least for now;"
    "even when money is tight;as {person} pointed out;and few people have noticed;if the weather allows;"
    "though opinions differ;especially {time};and the results speak for themselves;"
    "which surprised almost everyone;as long as there is enough {concept};for better or worse;"
    "in one way or another;more or less by accident;and nobody seems to mind;with very little help;"
    "without much fuss;despite the cost;long before it was fashionable;well into the night;"
    "for reasons that are still unclear;and it shows;because of {concept};rather than {concept2};"
    "according to {a_role} in {city}"
)
_EN_QUESTIONS = _split(
    "why do {agent} still {verb} the {thing} {time}?;what would happen if nobody {verbed} the {thing} anymore?;"
    "is {concept} really more important than {concept2}?;how can {agent} {verb} the {thing} without losing "
    "{concept}?;who decided that the {thing} should be {adj}?;does the {thing} need to be {verbed} every time?;"
    "what do {agent} in {city} know about {concept} that {agent2} do not?;"
    "should we {verb} the {thing} differently in the future?"
)
_EN_QUOTES = (
    '"The {thing} is all about {concept}," said {person}, {a_role} from {city}.',
    '"We {verbed} the {thing} {place} and it was {adj}," {person} recalled.',
    '"Most {agent} have no idea how {adj} the {thing} can be," {person} told us.',
    '"I have always wanted to {verb} {a_thing}," {person} said.',
    '"You learn more about {concept} from one {adj} {thing} than from any book," says {person}.',
    '"It is not the {thing} that matters, it is the {concept}," {person} insisted.',
)
_EN_TITLES = _split(
    "how to {verb} the perfect {thing};why {agent} still {verb} the {thing};the {adj} history of the {thing};"
    "{num} things nobody tells you about {concept};a beginner's guide to {concept};"
    "what {city} taught us about {concept};in defence of the {adj} {thing};the quiet return of {concept};"
    "{person} on {concept} and the {thing};inside the {adj} world of {agent};is the {thing} really worth it?;"
    "the {thing} that changed everything;when {agent} meet the {adj} {thing};"
    "{concept}, {concept2} and the {adj} {thing}"
)
_EN_HEADINGS = _split(
    "{concept} in practice;a closer look at the {thing};what comes next;the role of {concept};"
    "lessons from {city};getting started;what the {agent} say;a note on {concept}"
)
_EN_ITEMS = _split(
    "{verb} the {thing} {adv};keep {concept} in mind;ask {agent} about the {thing};"
    "never {verb} {a_thing} in a hurry;start with {a_adj} {thing};give the {thing} enough time;"
    "write down what you {verbed} and why;compare the {thing} with the {thing2};"
    "look for {a_adj} {thing} {place};talk to {a_role} before you begin;set aside time {time}"
)
_NO_OPENER = ("if ", "with ", "without ", "to ", "for ", "the more ", "not every ", "there was a time")
_SMALL_TITLE_WORDS = frozenset(_split("a;an;the;of;and;or;to;in;on;at;for;with;by;from;about"))


def _third_person(verb: str) -> str:
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if verb.endswith("y") and verb[-2:-1] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _en_slots(topic: str) -> dict[str, tuple[str, ...]]:
    agents, things, adjs, verbs, concepts, places, roles = (_split(s) for s in _EN_TOPICS[topic])
    base = tuple(v.split("|")[0] for v in verbs)
    return {
        **_EN_GENERAL,
        "agent": agents,
        "thing": things,
        "adj": adjs,
        "verb": base,
        "verbs": tuple(_third_person(v) for v in base),
        "verbed": tuple(v.split("|")[1] for v in verbs),
        "concept": concepts,
        "place": places,
        "role": roles,
    }


_EN_SLOTS = {topic: _en_slots(topic) for topic in _EN_TOPICS}


# --------------------------------------------------------------------------- other languages
@dataclass(frozen=True)
class _Lang:
    """A small grammar: slot vocabularies and sentence/title templates (with final punctuation)."""

    slots: dict[str, tuple[str, ...]]
    sentences: tuple[str, ...]
    titles: tuple[str, ...]
    spaced: bool = True  # False for Chinese and Japanese (no spaces between words)


def _lang(slots: dict[str, str], verbs: str, sentences: str, titles: str, spaced: bool = True) -> _Lang:
    """Build a :class:`_Lang`; ``verbs`` is ``present|past-or-participle`` pairs, slots ``v`` and ``vp``."""
    pairs = [v.split("|") for v in _split(verbs)]
    table = {k: _split(v) for k, v in slots.items()}
    table |= {"v": tuple(p[0] for p in pairs), "vp": tuple(p[1] for p in pairs)}
    table["year"] = _EN_GENERAL["year"]
    return _Lang(table, _split(sentences), _split(titles), spaced)


_LANGS: dict[str, _Lang] = {
    "de": _lang(
        {
            "s": "viele Menschen;die Forscher;junge Familien;die Bewohner der Stadt;erfahrene Köche;"
            "die meisten Besucher;unsere Leser;die Schüler;ältere Gärtner;die Mitarbeiter;zahlreiche Touristen;"
            "die Musiker;die Nachbarn;viele Studenten",
            "o": "den alten Bahnhof;die neue Bibliothek;das kleine Café am Markt;frisches Brot vom Bäcker;"
            "die Berge im Süden;den Wochenmarkt;die Geschichte der Region;moderne Technik;"
            "den Garten hinter dem Haus;die Musik ihrer Jugend;das Fußballspiel am Samstag;die Straßenbahn;"
            "günstige Wohnungen;die Ergebnisse der Studie;den Stadtpark;die Weinfeste an der Mosel",
            "thing": "der alte Bahnhof;die neue Bibliothek;das Museum am Fluss;der Wochenmarkt;die Straßenbahn;"
            "der Stadtpark;die Schule im Viertel;das Rathaus;der Hafen;die Brücke über den Rhein;das Freibad;"
            "die Bäckerei an der Ecke",
            "adj": "schön;teuer;beliebt;wichtig;überfüllt;ruhig;modern;bekannt;gemütlich;einzigartig;umstritten;"
            "praktisch",
            "t": "jeden Morgen;am Wochenende;seit vielen Jahren;im Sommer;fast täglich;immer häufiger;"
            "trotz des Regens;nach der Arbeit;mit großer Freude;im Herbst;an Feiertagen",
            "p": "in München;in der Altstadt;am Ufer des Sees;auf dem Land;in Köln;im Norden;in Hamburg;"
            "in kleinen Dörfern;in Leipzig;am Bodensee;in Freiburg",
            "name": "Anna Schmidt;Thomas Müller;Julia Weber;Stefan Fischer;Katrin Wagner;Markus Becker;"
            "Sabine Hoffmann;Jürgen Schäfer;Lena Koch;Michael Bauer",
        },
        "lieben|geliebt;besuchen|besucht;entdecken|entdeckt;beobachten|beobachtet;kritisieren|kritisiert;"
        "unterstützen|unterstützt;brauchen|gebraucht;vergleichen|verglichen;planen|geplant;vermissen|vermisst;"
        "schätzen|geschätzt;untersuchen|untersucht;fotografieren|fotografiert;renovieren|renoviert",
        "{s} {v} {o} {t}.;{t} {v} {s} {o} {p}.;es ist kein Geheimnis, dass {s} {o} {t} {v}.;"
        "nach Angaben von {name} {v} {s} {o} {p}.;{thing} ist {p} besonders {adj}.;"
        "{s} {v} {o}, weil {thing} {p} so {adj} ist.;{name} erklärt, dass {s} {o} {t} {v}.;"
        "ob {thing} wirklich so {adj} ist, wissen nur {s}.;und doch {v} {s} {o} {t}.;{s} haben {o} {t} {vp}.;"
        "seit {year} haben {s} {o} {p} {vp}.;wer {o} {t} sehen möchte, sollte früh aufstehen.;"
        "{thing} gilt seit {year} als {adj}, und {s} sind stolz darauf.;"
        "viele fragen sich, warum {s} {o} {t} {v}.;„{thing} ist einfach {adj}“, sagt {name}.;"
        "{s} und {s2} {v} gemeinsam {o} {p}.",
        "warum {s} {o} {v};so {v} {s} {o} {p};{thing}: {adj} und doch unterschätzt",
    ),
    "fr": _lang(
        {
            "s": "les habitants;beaucoup de familles;les chercheurs;les touristes;nos lecteurs;les jeunes;"
            "les agriculteurs;les musiciens;les élèves;les cuisiniers;les voisins;de nombreux étudiants",
            "o": "le vieux marché;la cathédrale;les petits cafés du quartier;le pain frais;"
            "la musique traditionnelle;les plages du sud;le musée d'art moderne;les jardins publics;"
            "la cuisine régionale;les vins de la région;le festival d'été;les chemins de montagne;la vieille gare;"
            "les fromages de la vallée",
            "thing": "le vieux marché|m;la cathédrale|f;le musée|m;la gare|f;le port|m;la bibliothèque|f;"
            "le parc|m;la place centrale|f;le théâtre|m;la plage|f",
            "adj": "animé|animée;célèbre|célèbre;calme|calme;cher|chère;populaire|populaire;important|importante;"
            "magnifique|magnifique;fréquenté|fréquentée;agréable|agréable;ancien|ancienne",
            "t": "chaque matin;le week-end;depuis des années;en été;presque tous les jours;de plus en plus souvent;"
            "malgré la pluie;après le travail;avec plaisir;en automne;pendant les vacances",
            "p": "à Paris;à Lyon;dans le centre-ville;au bord de la mer;à la campagne;en Bretagne;à Marseille;"
            "dans les Alpes;à Bordeaux;en Provence;à Toulouse",
            "name": "Marie Dubois;Pierre Martin;Sophie Bernard;Luc Petit;Camille Durand;Julien Leroy;"
            "Élise Moreau;François Simon;Hélène Laurent;Nicolas Lefèvre",
        },
        "aiment|aimé;visitent|visité;découvrent|découvert;préparent|préparé;observent|observé;défendent|défendu;"
        "critiquent|critiqué;cherchent|cherché;partagent|partagé;protègent|protégé;attendent|attendu;"
        "étudient|étudié;photographient|photographié",
        "{s} {v} {o} {t}.;{t}, {s} {v} {o} {p}.;selon {name}, {s} {v} {o} {t}.;il est vrai que {s} {v} {o} {p}.;"
        "{thing} est très {adj} {p}.;{s} ont {vp} {o} {p} en {year}.;"
        "depuis {year}, {s} {v} {o} avec beaucoup d'attention.;"
        "pour {s}, {thing} reste {adj}, et c'est une bonne nouvelle.;"
        "on dit souvent que {thing} est {adj}, mais {s} ne sont pas d'accord.;"
        "{s} {v} {o} parce que {thing} est {adj} {p}.;chaque année, {s} {v} {o} et {v2} {o2}.;"
        "« {thing} est vraiment {adj} », explique {name}.;{s} n'ont jamais {vp} {o} {p}.;"
        "{s} et {s2} {v} ensemble {o} {t}.",
        "pourquoi {s} {v} {o};{thing}, toujours aussi {adj};{p}, {s} {v} {o}",
    ),
    "es": _lang(
        {
            "s": "los vecinos;muchas familias;los investigadores;los turistas;nuestros lectores;los jóvenes;"
            "los agricultores;los músicos;los estudiantes;los cocineros;los mayores;muchos niños",
            "o": "el mercado central;la catedral;los pequeños cafés del barrio;el pan recién hecho;"
            "la música tradicional;las playas del sur;el museo de arte;los jardines públicos;la cocina regional;"
            "los vinos de la región;el festival de verano;los caminos de montaña;la vieja estación;"
            "los quesos del valle",
            "thing": "el mercado|m;la catedral|f;el museo|m;la estación|f;el puerto|m;la biblioteca|f;el parque|m;"
            "la plaza mayor|f;el teatro|m;la playa|f",
            "adj": "famoso|famosa;tranquilo|tranquila;caro|cara;popular|popular;importante|importante;"
            "precioso|preciosa;concurrido|concurrida;antiguo|antigua;agradable|agradable;conocido|conocida",
            "t": "cada mañana;los fines de semana;desde hace años;en verano;casi todos los días;cada vez más;"
            "a pesar de la lluvia;después del trabajo;con mucha ilusión;en otoño;durante las vacaciones",
            "p": "en Madrid;en Sevilla;en el centro de la ciudad;junto al mar;en el campo;en Galicia;en Barcelona;"
            "en los Pirineos;en Valencia;en Andalucía;en Bilbao",
            "name": "María García;José Martínez;Lucía Fernández;Javier López;Carmen Sánchez;Alejandro Pérez;"
            "Ana Gómez;Sergio Díaz;Elena Ruiz;Pablo Muñoz",
        },
        "visitan|visitado;prefieren|preferido;descubren|descubierto;preparan|preparado;observan|observado;"
        "defienden|defendido;critican|criticado;buscan|buscado;comparten|compartido;protegen|protegido;"
        "estudian|estudiado;recuerdan|recordado",
        "{s} {v} {o} {t}.;{t}, {s} {v} {o} {p}.;según {name}, {s} {v} {o} {t}.;es cierto que {s} {v} {o} {p}.;"
        "{thing} es muy {adj} {p}.;en {year}, {s} ya habían {vp} {o} {p}.;"
        "desde {year}, {s} {v} {o} con mucho cuidado.;"
        "para {s}, {thing} sigue siendo {adj}, y eso es una buena noticia.;"
        "se dice a menudo que {thing} es {adj}, pero {s} no están de acuerdo.;"
        "{s} {v} {o} porque {thing} es {adj} {p}.;cada año, {s} {v} {o} y {v2} {o2}.;"
        "«{thing} es realmente {adj}», explica {name}.;¿por qué {s} {v} {o} {t}?;{s} nunca han {vp} {o} {p}.;"
        "{s} y {s2} {v} juntos {o} {t}.",
        "por qué {s} {v} {o};{thing}, cada vez más {adj};{p}, {s} {v} {o}",
    ),
    "ru": _lang(
        {
            "s": "жители города;многие семьи;учёные;туристы;наши читатели;студенты;местные фермеры;музыканты;"
            "опытные повара;пожилые люди;школьники;соседи",
            "o": "старый вокзал;новую библиотеку;городской парк;местную кухню;горные тропы;историю региона;"
            "современную музыку;летний фестиваль;свежий хлеб;центральный рынок;старые фотографии;"
            "результаты исследования;набережную реки;деревянные дома",
            "thing": "старый вокзал|m;новая библиотека|f;городской парк|m;центральная площадь|f;музей|m;театр|m;"
            "набережная|f;рынок|m;озеро|n;здание почты|n",
            "adj": "известен|известна|известно;популярен|популярна|популярно;красив|красива|красиво;"
            "важен|важна|важно;спокоен|спокойна|спокойно;знаменит|знаменита|знаменито;удобен|удобна|удобно",
            "was": "был|была|было",
            "t": "каждое утро;по выходным;уже много лет;летом;почти каждый день;всё чаще;несмотря на дождь;"
            "после работы;с большим удовольствием;осенью;во время каникул",
            "p": "в Москве;в Санкт-Петербурге;в центре города;на берегу реки;в деревне;на севере;в Казани;"
            "в Новосибирске;в Ярославле;на Урале;в Калининграде",
            "name": "Анна Смирнова;Иван Петров;Мария Иванова;Сергей Кузнецов;Елена Попова;Дмитрий Соколов;"
            "Ольга Лебедева;Алексей Новиков;Наталья Морозова;Михаил Волков",
        },
        "любят|любили;посещают|посещали;изучают|изучали;обсуждают|обсуждали;ремонтируют|ремонтировали;"
        "фотографируют|фотографировали;защищают|защищали;критикуют|критиковали;ищут|искали;"
        "вспоминают|вспоминали;ценят|ценили;открывают|открывали",
        "{s} {v} {o} {t}.;{t} {s} {v} {o} {p}.;как отмечает {name}, {s} {v} {o} {p}.;"
        "не секрет, что {s} {v} {o} {t}.;{thing} {adj} {p}, и это неудивительно.;"
        "ещё в {year} году {s} {vp} {o} {p}.;{s} {v} {o}, потому что {thing} {adj} {p}.;"
        "почему {s} {v} {o} {t}?;каждый год {s} {v} {o} и {v2} {o2}.;"
        "«{thing} {adj} далеко за пределами города», — говорит {name}.;"
        "раньше {s} редко {vp} {o}, но теперь всё иначе.;в {year} году {thing} {was} особенно {adj}.;"
        "{s} и {s2} вместе {v} {o} {t}.",
        "почему {s} {v} {o};{thing}: {adj} и сегодня;{p} {s} {v} {o}",
    ),
    "zh": _lang(
        {
            "s": "很多市民;研究人员;年轻人;游客们;当地的农民;老师和学生;厨师们;音乐爱好者;我们的读者;附近的居民;"
            "退休的老人;孩子们",
            "o": "老城区的小吃;新建的图书馆;传统音乐;城市公园;当地的历史;周末的市场;新的技术;山里的小路;"
            "春天的花园;博物馆的展览;家乡的菜;这项研究的结果;江边的老房子;夜市的灯光",
            "adj": "有意思;重要;受欢迎;方便;安静;热闹;有名;特别",
            "t": "每天早上;每个周末;这些年来;夏天的时候;几乎每天;越来越多地;下班以后;春节期间;秋天",
            "p": "在北京;在上海;在市中心;在河边;在农村;在南方;在杭州;在成都;在西安;在广州",
            "name": "王先生;李女士;张老师;刘教授;陈经理;赵医生;杨记者;黄阿姨",
        },
        "喜欢|喜欢过;参观|参观过;讨论|讨论过;研究|研究过;支持|支持过;关注|关注过;记录|记录过;分享|分享过;"
        "保护|保护过;尝试|尝试过;介绍|介绍过;欣赏|欣赏过",
        "{s}{t}{p}{v}{o}。;{t}，{s}{p}{v}{o}。;据{name}介绍，{s}{t}{v}{o}。;"
        "{s}之所以{v}{o}，是因为{o2}非常{adj}。;{o}{p}非常{adj}，{s}{t}都会去看看。;"
        "{year}年以来，{s}一直在{v}{o}。;为什么{s}{t}{v}{o}？;{s}认为，{o}比以前更加{adj}了。;"
        "对于{s}来说，{o}是生活中很{adj}的一部分。;“{o}真的很{adj}。”{name}说。;{s}和{s2}一起{v}{o}。;"
        "{s}早在{year}年就{vp}{o}。",
        "{s}为什么{v}{o};{o}：{adj}的新变化;{p}，{s}{v}{o}",
        spaced=False,
    ),
    "ja": _lang(
        {
            "s": "多くの市民;研究者たち;若い人たち;観光客;地元の農家;先生と生徒;料理人たち;音楽ファン;読者の皆さん;"
            "近所の住民;お年寄り;子どもたち",
            "o": "古い町並み;新しい図書館;伝統的な音楽;町の公園;地域の歴史;週末の市場;新しい技術;山の小道;春の庭;"
            "博物館の展示;ふるさとの料理;調査の結果;川沿いの桜並木;駅前の商店街",
            "adj": "人気があります;大切です;有名です;便利です;静かです;にぎやかです;魅力的です",
            "t": "毎朝;毎週末;ここ数年;夏になると;ほとんど毎日;最近ますます;仕事の後で;秋になると;お正月には",
            "p": "東京で;大阪で;町の中心で;川のそばで;田舎で;北海道で;京都で;福岡で;名古屋で;沖縄で",
            "name": "田中さん;佐藤さん;鈴木先生;高橋教授;伊藤さん;渡辺さん;山本さん;中村さん",
        },
        "楽しんでいます|楽しみました;訪れています|訪れました;研究しています|研究しました;"
        "紹介しています|紹介しました;守っています|守りました;記録しています|記録しました;"
        "大切にしています|大切にしました;話し合っています|話し合いました;試しています|試しました;"
        "応援しています|応援しました;見直しています|見直しました;撮影しています|撮影しました",
        "{s}は{t}{p}{o}を{v}。;{t}、{s}は{o}を{v}。;{name}によると、{s}は{t}{o}を{v}。;"
        "{year}年に、{s}は{p}{o}を{vp}。;{o}は{p}とても{adj}。;{s}にとって、{o}は生活の大切な一部です。;"
        "{s}は{o}を{v}が、{o2}も{adj}。;「{o}は本当に{adj}」と{name}は話します。;"
        "{s}と{s2}は、{t}一緒に{o}を{v}。;なぜ{s}は{o}を大切にするのでしょうか。;{p}は、{o}が{adj}。",
        "{o}と{s};{s}が語る{o}の魅力;{o}の今",
        spaced=False,
    ),
}

# language -> nav labels (6); cookie text; accept; learn more; related; newsletter; newsletter blurb;
# subscribe; rights; privacy; terms; byline prefix; search; 404 heading; 404 text
_CHROME: dict[str, tuple[str, ...]] = {
    "en": (
        "Home|News|Topics|Opinion|About|Contact",
        "We use cookies to improve your experience. By continuing to browse this site you agree to our use of "
        "cookies.",
        "Accept", "Learn more", "Related stories", "Newsletter",
        "Get the best stories delivered to your inbox every Friday.", "Subscribe", "All rights reserved.",
        "Privacy policy", "Terms of use", "By", "Search", "Page not found",
        "Sorry, the page you are looking for does not exist or has been moved.",
    ),
    "de": (
        "Startseite|Nachrichten|Themen|Meinung|Über uns|Kontakt",
        "Wir verwenden Cookies, um Ihnen das beste Erlebnis auf unserer Website zu bieten.",
        "Akzeptieren", "Mehr erfahren", "Das könnte Sie auch interessieren", "Newsletter",
        "Die wichtigsten Geschichten der Woche jeden Freitag in Ihrem Postfach.", "Abonnieren",
        "Alle Rechte vorbehalten.", "Datenschutz", "Impressum", "Von", "Suche", "Seite nicht gefunden",
        "Die gesuchte Seite existiert leider nicht.",
    ),
    "fr": (
        "Accueil|Actualités|Thèmes|Opinions|À propos|Contact",
        "Nous utilisons des cookies pour améliorer votre expérience sur notre site.",
        "Accepter", "En savoir plus", "À lire aussi", "Lettre d'information",
        "Recevez chaque vendredi une sélection de nos meilleurs articles.", "S'inscrire",
        "Tous droits réservés.", "Confidentialité", "Mentions légales", "Par", "Rechercher", "Page introuvable",
        "La page que vous cherchez n'existe pas.",
    ),
    "es": (
        "Inicio|Noticias|Temas|Opinión|Quiénes somos|Contacto",
        "Utilizamos cookies para mejorar su experiencia en nuestro sitio web.",
        "Aceptar", "Más información", "También le puede interesar", "Boletín",
        "Reciba cada viernes una selección de nuestras mejores historias.", "Suscribirse",
        "Todos los derechos reservados.", "Privacidad", "Aviso legal", "Por", "Buscar", "Página no encontrada",
        "La página que busca no existe.",
    ),
    "ru": (
        "Главная|Новости|Темы|Мнения|О нас|Контакты",
        "Мы используем файлы cookie, чтобы сделать сайт удобнее для вас.",
        "Принять", "Подробнее", "Читайте также", "Рассылка", "Лучшие материалы недели каждую пятницу.",
        "Подписаться", "Все права защищены.", "Конфиденциальность", "Правила", "Автор:", "Поиск",
        "Страница не найдена", "Такой страницы не существует.",
    ),
    "zh": (
        "首页|新闻|专题|评论|关于我们|联系我们",
        "本网站使用cookie来改善您的浏览体验。",
        "接受", "了解更多", "相关阅读", "新闻邮件", "每周五把精选文章发送到您的邮箱。", "订阅", "版权所有。",
        "隐私政策", "使用条款", "作者：", "搜索", "页面不存在", "您访问的页面不存在。",
    ),
    "ja": (
        "ホーム|ニュース|特集|オピニオン|会社概要|お問い合わせ",
        "当サイトでは、より良いサービスを提供するためにクッキーを使用しています。",
        "同意する", "詳しく見る", "関連記事", "ニュースレター", "毎週金曜日におすすめの記事をお届けします。",
        "登録する", "無断転載を禁じます。", "プライバシーポリシー", "利用規約", "文：", "検索",
        "ページが見つかりません", "お探しのページは存在しません。",
    ),
}
_NAV_PATHS = ("/", "/news/", "/topics/", "/opinion/", "/about/", "/contact/")


@dataclass(frozen=True)
class _Site:
    domain: str
    name: str
    lang: str
    section: str
    topics: tuple[str, ...] = ()
    theme: str = "site"


_EN_SITES = (
    _Site("news.example-site.test", "The Example Herald", "en", "news",
          ("history", "science", "technology", "sports"), "herald"),
    _Site("www.kitchen-notes.test", "Kitchen Notes", "en", "recipes", ("cooking", "health", "gardening"), "kn"),
    _Site("travel.example-journal.test", "Example Travel Journal", "en", "stories",
          ("travel", "history", "architecture"), "tj"),
    _Site("blog.tech-review.test", "Tech Review Blog", "en", "posts", ("technology", "science", "music"), "trb"),
    _Site("www.green-fingers.test", "Green Fingers", "en", "garden", ("gardening", "cooking", "health"), "gf"),
    _Site("sports.example-daily.test", "Example Daily Sport", "en", "sport", ("sports", "health"), "eds"),
    _Site("www.music-corner.test", "Music Corner", "en", "features", ("music", "history", "architecture"), "mc"),
)
_LANG_SITES = {
    "de": _Site("www.beispiel-zeitung.test", "Beispiel Zeitung", "de", "artikel", theme="bz"),
    "fr": _Site("www.journal-exemple.test", "Le Journal Exemple", "fr", "article", theme="je"),
    "es": _Site("www.diario-ejemplo.test", "Diario Ejemplo", "es", "noticia", theme="de"),
    "ru": _Site("www.primer-novosti.test", "Новости Пример", "ru", "novosti", theme="pn"),
    "zh": _Site("www.shili-ribao.test", "示例日报", "zh", "xinwen", theme="sr"),
    "ja": _Site("www.sample-nippo.test", "サンプル日報", "ja", "kiji", theme="sn"),
}
_SPAM_SITES = (
    _Site("www.cheap-deals-4u.test", "Cheap Deals 4U", "en", "deals", theme="cd"),
    _Site("www.super-discount-outlet.test", "Super Discount Outlet", "en", "shop", theme="sdo"),
)
_SPAM_PRODUCTS = _split(
    "watches;sneakers;designer sunglasses;payday loans;phone cases;casino bonus codes;gift cards;"
    "replica handbags;flights;diet pills"
)
_SERVERS = _split("nginx;Apache;nginx/1.24.0;Apache/2.4.58 (Ubuntu);cloudflare;Microsoft-IIS/10.0;LiteSpeed")
_MONTHS = _split(
    "January;February;March;April;May;June;July;August;September;October;November;December"
)


# --------------------------------------------------------------------------- text generation
_TOKEN = re.compile(r"\{(a_)?([a-z]+)(\d?)\}")
_GENDERS = {"m": 0, "f": 1, "n": 2}


def _cap(text: str) -> str:
    """Upper-case the first letter (after any leading quote or inverted punctuation)."""
    for k, ch in enumerate(text):
        if ch.isalpha():
            return text[:k] + ch.upper() + text[k + 1 :]
    return text


def _title_case(text: str) -> str:
    words = text.split(" ")
    return " ".join(
        w if (k and w in _SMALL_TITLE_WORDS) or not w[:1].isalpha() else w[:1].upper() + w[1:]
        for k, w in enumerate(words)
    )


class _Text:
    """Fills templates for one page; templates are drawn without replacement so a page rarely repeats one."""

    def __init__(self, rng: random.Random, slots: dict[str, tuple[str, ...]]) -> None:
        self.rng = rng
        self.slots = slots
        self._decks: dict[str, list[str]] = {}

    def draw(self, deck: str, items: tuple[str, ...]) -> str:
        pool = self._decks.get(deck)
        if not pool:
            pool = self._decks[deck] = list(items)
            self.rng.shuffle(pool)
        return pool.pop()

    def fill(self, template: str) -> str:
        """Replace ``{slot}``, ``{slot2}`` (a different value) and ``{a_slot}`` (with a/an).

        A value ``noun|f`` sets the grammatical gender that later ``m|f|n`` form lists agree with.
        """
        used: dict[str, str] = {}
        gender = 0

        def sub(m: re.Match[str]) -> str:
            nonlocal gender
            article, name, n = m.groups()
            options = self.slots[name]
            value = self.rng.choice(options)
            while n and len(options) > 1 and value == used.get(name):
                value = self.rng.choice(options)
            used.setdefault(name, value)
            parts = value.split("|")
            if parts[-1] in _GENDERS:
                gender, value = _GENDERS[parts[-1]], parts[0]
            elif len(parts) > 1:
                value = parts[min(gender, len(parts) - 1)]
            if article:
                value = ("an " if value[0] in "aeiou" else "a ") + value
            return value

        return _TOKEN.sub(sub, template)


def _en_sentence(t: _Text) -> str:
    r = t.rng.random()
    if r < 0.06:
        return _cap(t.fill(t.draw("quote", _EN_QUOTES)))
    if r < 0.12:
        return _cap(t.fill(t.draw("question", _EN_QUESTIONS)))
    s = t.fill(t.draw("core", _EN_CORES))
    if t.rng.random() < 0.35 and not s.startswith(_NO_OPENER):
        s = t.fill(t.draw("opener", _EN_OPENERS)) + ", " + s
    if t.rng.random() < 0.3:
        s += ", " + t.fill(t.draw("tail", _EN_TAILS))
    return _cap(s) + "."


def _lang_sentence(t: _Text, lang: _Lang) -> str:
    return _cap(t.fill(t.draw("sentence", lang.sentences)))


def _size(text: str, spaced: bool) -> int:
    """Length in words (about two characters per word for Chinese and Japanese)."""
    return len(text.split()) if spaced else len(text) // 2


def _paragraph(t: _Text, lang: _Lang | None, lo: int = 20, hi: int = 150) -> str:
    """Sentences until a target of ``lo..hi`` words is reached, never exceeding ``hi``."""
    spaced = lang is None or lang.spaced
    target = t.rng.randint(lo, hi)
    out: list[str] = []
    n = 0
    while n < target:
        s = _en_sentence(t) if lang is None else _lang_sentence(t, lang)
        k = _size(s, spaced)
        if out and n + k > hi:
            break
        out.append(s)
        n += k
    return (" " if spaced else "").join(out)


@dataclass
class _Article:
    lang: str
    topic: str
    title: str
    author: str
    blocks: list[tuple[str, str | tuple[str, ...]]]  # ("p" | "h2", text) or ("ul", items)

    @property
    def paragraphs(self) -> tuple[str, ...]:
        return tuple(text for kind, text in self.blocks if kind == "p")  # type: ignore[misc]


def _en_article(rng: random.Random, topic: str) -> _Article:
    t = _Text(rng, _EN_SLOTS[topic])
    n = rng.randint(3, 10)
    blocks: list[tuple[str, str | tuple[str, ...]]] = []
    has_list = False
    for k in range(n):
        if k and n >= 5 and rng.random() < 0.25:
            blocks.append(("h2", _cap(t.fill(t.draw("heading", _EN_HEADINGS)))))
        blocks.append(("p", _paragraph(t, None)))
        if k and not has_list and rng.random() < 0.15:
            items = tuple(_cap(t.fill(t.draw("item", _EN_ITEMS))) for _ in range(rng.randint(3, 6)))
            blocks.append(("ul", items))
            has_list = True
    title = _title_case(_cap(t.fill(rng.choice(_EN_TITLES))))
    return _Article("en", topic, title, rng.choice(_EN_GENERAL["person"]), blocks)


def _lang_article(rng: random.Random, code: str) -> _Article:
    lang = _LANGS[code]
    t = _Text(rng, lang.slots)
    blocks: list[tuple[str, str | tuple[str, ...]]] = [
        ("p", _paragraph(t, lang)) for _ in range(rng.randint(3, 8))
    ]
    title = _cap(t.fill(rng.choice(lang.titles)))
    return _Article(code, "", title, rng.choice(lang.slots["name"]), blocks)


# --------------------------------------------------------------------------- HTML
@dataclass(frozen=True)
class _Charset:
    """How an HTML page is encoded and where (if anywhere) the encoding is declared."""

    codec: str  # Python codec used to encode the page
    http: str | None = None  # charset parameter of the HTTP Content-Type
    meta: str | None = None  # charset declared in the HTML head
    http_equiv: bool = False  # old-style <meta http-equiv="Content-Type" ...> instead of <meta charset>

    @property
    def declared(self) -> str:
        return "+".join(w for w, v in (("http", self.http), ("meta", self.meta)) if v) or "none"

    @property
    def content_type(self) -> str:
        return f"text/html; charset={self.http}" if self.http else "text/html"

    def meta_tag(self) -> str:
        if not self.meta:
            return ""
        if self.http_equiv:
            return f'<meta http-equiv="Content-Type" content="text/html; charset={self.meta}">\n'
        return f'<meta charset="{self.meta}">\n'


_UTF8 = _Charset("utf-8", "utf-8", "utf-8")


def _esc(text: str) -> str:
    return html.escape(text, quote=False)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "page"


def _blocks_html(blocks: list[tuple[str, str | tuple[str, ...]]]) -> str:
    out = []
    for kind, value in blocks:
        if kind == "ul":
            out.append("<ul>\n" + "".join(f"<li>{_esc(i)}</li>\n" for i in value) + "</ul>")
        else:
            out.append(f"<{kind}>{_esc(value)}</{kind}>")  # type: ignore[arg-type]
    return "\n".join(out)


def _footer_line(site: _Site, year: int) -> str:
    return f"© {year} {site.name}. {_CHROME[site.lang][8]}"


def _document(
    site: _Site,
    url: str,
    title: str,
    main: str,
    rng: random.Random,
    charset: _Charset,
    year: int,
    related: list[str],
    description: str = "",
) -> str:
    """A full page: head with styles and scripts, cookie banner, header and nav, main, sidebar, footer."""
    c = _CHROME[site.lang]
    t = site.theme
    tag = rng.randrange(10**6, 10**7)
    asset = hashlib.sha1(f"{site.domain}:{tag}".encode()).hexdigest()[:10]
    labels = c[0].split("|")
    nav = "".join(f'<li><a href="{p}">{_esc(label)}</a></li>' for p, label in zip(_NAV_PATHS, labels, strict=True))
    links = "".join(
        f'<li><a href="/{site.section}/{rng.randrange(10**5, 10**6)}/">{_esc(r)}</a></li>\n' for r in related
    )
    ld = json.dumps({"@context": "https://schema.org", "@type": "Article", "headline": title, "url": url})
    desc = f'<meta name="description" content="{html.escape(description)}">\n' if description else ""
    return (
        f'<!DOCTYPE html>\n<html lang="{site.lang}">\n<head>\n{charset.meta_tag()}'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_esc(title)} | {_esc(site.name)}</title>\n{desc}"
        f'<link rel="canonical" href="{url}">\n'
        f'<link rel="stylesheet" href="/assets/{t}.{asset}.css">\n'
        f"<style>\n.{t}-header{{background:#{asset[:6]};padding:12px 24px}}"
        f".{t}-nav li{{display:inline-block;margin-right:16px}}\n"
        ".cookie-banner{position:fixed;bottom:0;left:0;right:0;background:#222;color:#fff;padding:10px}\n"
        "article p{line-height:1.6;max-width:42em}aside.sidebar{float:right;width:280px}\n</style>\n"
        f'<script async src="https://analytics.example-cdn.test/tag.js?id=UA-{tag}-1"></script>\n'
        "<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments);}"
        f'gtag("js",new Date());gtag("config","UA-{tag}-1");</script>\n'
        f'<script type="application/ld+json">{ld}</script>\n'
        f'</head>\n<body class="{t}-body">\n'
        f'<div id="cookie-consent" class="cookie-banner"><p>{_esc(c[1])}</p>'
        f'<button type="button">{_esc(c[2])}</button> <a href="/privacy/">{_esc(c[3])}</a></div>\n'
        f'<header class="{t}-header site-header"><a class="logo" href="/">{_esc(site.name)}</a>\n'
        f'<nav class="{t}-nav main-nav"><ul>{nav}</ul></nav>\n'
        f'<form class="search" action="/search"><input type="search" name="q" placeholder="{_esc(c[12])}">'
        "</form>\n</header>\n"
        f'<div class="{t}-wrap">\n<main id="main-content">\n{main}\n</main>\n'
        f'<aside class="sidebar"><h3>{_esc(c[4])}</h3>\n<ul>\n{links}</ul>\n'
        f'<h3>{_esc(c[5])}</h3><p>{_esc(c[6])}</p><a class="button" href="/newsletter/">{_esc(c[7])}</a>'
        "</aside>\n</div>\n"
        f'<footer class="{t}-footer site-footer"><nav class="footer-nav"><a href="/privacy/">{_esc(c[9])}</a> | '
        f'<a href="/terms/">{_esc(c[10])}</a> | <a href="/contact/">{_esc(c[0].split("|")[-1])}</a></nav>\n'
        f'<p class="copyright">&copy; {year} {_esc(site.name)}. {_esc(c[8])}</p></footer>\n'
        f'<script src="/assets/app.{asset}.js" defer></script>\n</body>\n</html>\n'
    )


def _article_main(site: _Site, article: _Article, published: datetime) -> str:
    c = _CHROME[site.lang]
    when = (
        f"{_MONTHS[published.month - 1]} {published.day}, {published.year}"
        if site.lang == "en"
        else published.strftime("%Y-%m-%d")
    )
    return (
        f'<article class="post">\n<h1>{_esc(article.title)}</h1>\n'
        f'<p class="byline">{_esc(c[11])} <a href="/authors/{_slug(article.author)}/">{_esc(article.author)}</a>'
        f' &middot; <time datetime="{published:%Y-%m-%d}">{when}</time></p>\n'
        f"{_blocks_html(article.blocks)}\n</article>"
    )


# --------------------------------------------------------------------------- other payloads
def _png(rng: random.Random, width: int = 32, height: int = 24) -> bytes:
    """A small, valid RGB PNG with a diagonal gradient between two random colours."""
    c1 = [rng.randrange(256) for _ in range(3)]
    c2 = [rng.randrange(256) for _ in range(3)]
    rows = bytearray()
    for y in range(height):
        rows.append(0)  # filter type: none
        for x in range(width):
            f = (x + y) / (width + height - 2)
            rows += bytes(int(a + (b - a) * f) for a, b in zip(c1, c2, strict=True))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(bytes(rows), 9)) + chunk(
        b"IEND", b""
    )


def _pdf(lines: list[str]) -> bytes:
    """A one-page PDF 1.4 (Helvetica text) with a correct xref table."""
    shown = " ".join(
        "(" + ln.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ") '" for ln in lines
    )
    content = f"BT /F1 11 Tf 14 TL 72 740 Td {shown} ET".encode("latin-1", "replace")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for k, obj in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (k, obj)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


# --------------------------------------------------------------------------- the crawl
@dataclass(frozen=True)
class SamplePage:
    """What was written for one capture (for tests and for reading the demo's numbers)."""

    warc: int  # index of the WARC file
    url: str
    kind: str  # one of _KINDS: article, exact_copy, near_copy, spam, ..., redirect, revisit
    record_type: str  # response | revisit
    status: int
    content_type: str | None  # HTTP Content-Type as served
    lang: str | None = None
    charset: str | None = None  # Python codec the HTML is encoded with
    declared: str | None = None  # where that charset is declared: http, meta, http+meta or none
    title: str | None = None
    paragraphs: tuple[str, ...] = ()  # article text (articles and their copies)
    footer: str | None = None  # the page's copyright line (boilerplate main-content extraction drops)
    copy_of: str | None = None  # source URL of copies and revisits


@dataclass
class SampleCrawl:
    warc_paths: list[Path]
    manifest_path: Path  # out_dir / "warc.paths": the WARC file names relative to out_dir, one per line
    counts: dict[str, int]  # per kind, per article language (lang:xx), and totals
    pages: list[SamplePage] = field(default_factory=list)


@dataclass
class _Fetch:
    """One HTTP response to write (before CC's header rewriting) and its description."""

    status: int
    content_type: str | None
    body: bytes
    page: SamplePage
    extra: list[tuple[str, str]] = field(default_factory=list)
    transfer: str | None = None  # gzip | chunked | identity; random when None


@dataclass(frozen=True)
class _Source:
    """An English article that later copies can be made of."""

    warc: int
    url: str
    site: _Site
    article: _Article
    published: datetime
    fetch: _Fetch


_CHARSET_PAGES: tuple[tuple[str, _Charset], ...] = (
    ("de", _Charset("cp1252", "windows-1252")),  # legacy charset in the HTTP header
    ("fr", _Charset("latin-1", None, "iso-8859-1", http_equiv=True)),  # only in <meta http-equiv>
    ("ru", _Charset("cp1251", None, "windows-1251")),  # only in <meta charset>
    ("ja", _Charset("shift_jis", "Shift_JIS")),  # only in the HTTP header
    ("zh", _UTF8),
    ("es", _UTF8),
)
_NO_CHARSET = _Charset("utf-8")  # UTF-8 declared nowhere
_EN_CHARSETS = (_UTF8, _Charset("utf-8", "UTF-8", "utf-8"), _Charset("utf-8", None, "utf-8"),
                _Charset("utf-8", "utf-8"))
_CHARSET_NAMES = {"utf-8": "UTF-8", "cp1252": "windows-1252", "latin-1": "ISO-8859-1", "cp1251": "windows-1251",
                  "shift_jis": "Shift_JIS"}
_CLD2 = {"en": ("eng", "ENGLISH"), "de": ("deu", "GERMAN"), "fr": ("fra", "FRENCH"), "es": ("spa", "SPANISH"),
         "ru": ("rus", "RUSSIAN"), "zh": ("zho", "Chinese"), "ja": ("jpn", "Japanese")}
_COUNT_KEYS = {"article": "articles", "exact_copy": "exact_copies", "near_copy": "near_copies"}
_KINDS = ("article", "exact_copy", "near_copy", "spam", "boilerplate_only", "short", "list_heavy", "non_html",
          "not_found", "redirect", "revisit")
_SHORT_PAGES = (
    ("Thank you", "Thanks for signing up! Please check your inbox."),
    ("Coming soon", "Our new website is coming soon."),
    ("Maintenance", "We are down for maintenance. Back shortly."),
    ("Unsubscribed", "You have been removed from the list."),
    ("OK", "OK"),
)
_SPAM_LINES = (
    "Buy {p} online! Best {p} deals, {p} discount, {p} sale. Click here!!!",
    "CHEAP {P} - BEST PRICE GUARANTEED - CLICK HERE",
    "{p} {p} {p} cheap {p} best {p} buy {p} now",
    "Limited offer: {p} at 90% off. Click here to buy {p} today!",
    "Best {p}, cheap {p}, discount {p}, {p} for sale, buy {p}",
    "Click here click here click here for {p}",
)


def _plan(per: int, warc: int, rng: random.Random) -> list[tuple[str, object]]:
    """The page kinds of one WARC: an English article first, then the special kinds (the rarer ones
    dropped when ``per`` is small), the rest English articles, in shuffled order."""
    specials: list[tuple[str, object]] = [("article", x) for x in _CHARSET_PAGES]
    specials += [("article", (("de", "fr", "es")[warc % 3], _NO_CHARSET))]
    specials += [("non_html", k) for k in ("pdf", "png", "json", "txt")]
    specials += [("not_found", None), ("redirect", None), ("revisit", None), ("exact_copy", warc > 0),
                 ("near_copy", None), ("spam", None), ("boilerplate_only", None), ("short", None),
                 ("list_heavy", None)]
    specials += [("exact_copy", False), ("near_copy", None), ("spam", None)] * max(0, per // 30 - 1)
    specials += [("article", (rng.choice(("de", "fr", "es", "ru", "zh", "ja")), _UTF8)) for _ in range(per // 20)]
    slots = specials[: per - 1]
    slots += [("article", ("en", None))] * (per - 1 - len(slots))
    rng.shuffle(slots)
    return [("article", ("en", None)), *slots]


class _Crawl:
    """Generates pages in crawl order; remembers English articles so later pages can copy them."""

    def __init__(self, seed: int, per: int) -> None:
        self.seed = seed
        self.per = per
        rng = random.Random(f"{seed}:start")
        self.start = datetime(2024, 1, 1, tzinfo=UTC) + timedelta(days=rng.randrange(600),
                                                                  seconds=rng.randrange(86400))
        self.sources: list[_Source] = []
        self.pages: list[SamplePage] = []
        self.warc = 0

    # ------------------------------------------------------------------ helpers
    def _related(self, rng: random.Random, site: _Site) -> list[str]:
        if site.lang == "en":
            t = _Text(rng, _EN_SLOTS[rng.choice(site.topics)])
            return [_title_case(_cap(t.fill(t.draw("title", _EN_TITLES)))) for _ in range(rng.randint(3, 5))]
        lang = _LANGS[site.lang]
        t = _Text(rng, lang.slots)
        return [_cap(t.fill(t.draw("title", lang.titles))) for _ in range(3)]

    def _article_fetch(self, rng: random.Random, site: _Site, url: str, article: _Article, published: datetime,
                       cs: _Charset, year: int, kind: str, copy_of: str | None = None) -> _Fetch:
        first = article.paragraphs[0]
        desc = " ".join(first.split()[:25]) if article.lang not in ("zh", "ja") else first[:60]
        doc = _document(site, url, article.title, _article_main(site, article, published), rng, cs, year,
                        self._related(rng, site), desc)
        page = SamplePage(self.warc, url, kind, "response", 200, cs.content_type, article.lang, cs.codec,
                          cs.declared, article.title, article.paragraphs, _footer_line(site, year), copy_of)
        return _Fetch(200, cs.content_type, doc.encode(cs.codec), page)

    def _chrome_fetch(self, rng: random.Random, site: _Site, url: str, title: str, main: str, kind: str,
                      date: datetime, status: int = 200) -> _Fetch:
        doc = _document(site, url, title, main, rng, _UTF8, date.year, self._related(rng, site))
        page = SamplePage(self.warc, url, kind, "response", status, _UTF8.content_type, site.lang, "utf-8",
                          _UTF8.declared, title, footer=_footer_line(site, date.year))
        return _Fetch(status, _UTF8.content_type, doc.encode("utf-8"), page)

    # ------------------------------------------------------------------ page kinds
    def article(self, rng: random.Random, n: int, date: datetime, detail: tuple[str, _Charset | None]) -> _Fetch:
        lang, cs = detail
        published = date - timedelta(days=rng.randint(0, 900), seconds=rng.randrange(86400))
        if cs is None:
            cs = rng.choices(_EN_CHARSETS, (6, 2, 1, 1))[0]
        if lang == "en":
            site = rng.choice(_EN_SITES)
            article = _en_article(rng, rng.choice(site.topics))
            url = f"https://{site.domain}/{site.section}/{published:%Y/%m}/{_slug(article.title)}-{n}.html"
        else:
            site = _LANG_SITES[lang]
            article = _lang_article(rng, lang)
            url = f"https://{site.domain}/{site.section}/{published:%Y/%m}/{n}/"
        fetch = self._article_fetch(rng, site, url, article, published, cs, date.year, "article")
        if lang == "en":
            self.sources.append(_Source(self.warc, url, site, article, published, fetch))
        return fetch

    def exact_copy(self, rng: random.Random, n: int, date: datetime, from_earlier_warc: bool) -> _Fetch:
        pool = [s for s in self.sources if s.warc < self.warc] if from_earlier_warc else self.sources
        src = rng.choice(pool)
        path = src.url.split("/", 3)[3]
        url = rng.choice((
            f"{src.url}?utm_source=newsletter&utm_medium=email&utm_campaign={n}",
            f"https://{src.site.domain}/amp/{n}/{path}",
            f"https://www.news-mirror.test/{n}/{path}",
        ))
        page = replace(src.fetch.page, warc=self.warc, url=url, kind="exact_copy", copy_of=src.url)
        return _Fetch(200, src.fetch.content_type, src.fetch.body, page)

    def near_copy(self, rng: random.Random, n: int, date: datetime, _: object) -> _Fetch:
        src = rng.choice(self.sources)
        blocks = list(src.article.blocks)
        t = _Text(rng, _EN_SLOTS[src.article.topic])
        k = rng.choice([i for i, (kind, _) in enumerate(blocks) if kind == "p"])
        variant = rng.choice(("paragraph", "sentence", "boilerplate"))
        site = src.site
        if variant == "paragraph":
            blocks[k] = ("p", _paragraph(t, None))
        elif variant == "sentence":
            text = str(blocks[k][1])
            cuts = [0] + [m.end() for m in re.finditer(r'[.?!] (?=[A-Z"])', text)] + [len(text) + 1]
            at = rng.choice(cuts)
            blocks[k] = ("p", " ".join(x for x in (text[: max(at - 1, 0)], _en_sentence(t), text[at:]) if x))
        else:
            site = rng.choice([s for s in _EN_SITES if s != src.site])
        article = _Article("en", src.article.topic, src.article.title, src.article.author, blocks)
        url = f"https://{site.domain}/{site.section}/{date:%Y/%m}/{_slug(article.title)}-{n}.html"
        return self._article_fetch(rng, site, url, article, src.published, _UTF8, date.year, "near_copy", src.url)

    def spam(self, rng: random.Random, n: int, date: datetime, _: object) -> _Fetch:
        site = rng.choice(_SPAM_SITES)
        product = rng.choice(_SPAM_PRODUCTS)
        big = product.title()
        title = f"Buy {big} | Cheap {big} | Best {big} Online | {site.name}"
        lines = [rng.choice(_SPAM_LINES).format(p=product, P=product.upper()) for _ in range(rng.randint(12, 30))]
        links = "".join(f'<a href="/go/{rng.randrange(10**6)}">{_esc(p)}</a> ' for p in rng.sample(_SPAM_PRODUCTS, 6))
        body = "\n".join(f'<p>{_esc(ln)} <a href="/go/{rng.randrange(10**6)}">click here</a></p>' for ln in lines)
        doc = (
            '<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8">\n'
            f"<title>{_esc(title)}</title>\n"
            f'<meta name="keywords" content="{", ".join([product] * 12)}">\n'
            f"</head>\n<body>\n<h1>{_esc(big.upper())} !!! BEST PRICE !!!</h1>\n{body}\n"
            f'<div style="display:none">{_esc(" ".join([product] * 40))}</div>\n<div class="links">{links}</div>\n'
            "</body>\n</html>\n"
        )
        url = f"https://{site.domain}/{site.section}/buy-{_slug(product)}-{n}.html"
        page = SamplePage(self.warc, url, "spam", "response", 200, _UTF8.content_type, "en", "utf-8",
                          _UTF8.declared, title)
        return _Fetch(200, _UTF8.content_type, doc.encode("utf-8"), page)

    def boilerplate_only(self, rng: random.Random, n: int, date: datetime, _: object) -> _Fetch:
        site = rng.choice(_EN_SITES)
        title, main = rng.choice((
            ("Archive", "<h1>Archive</h1>\n<p>No stories found.</p>"),
            ("Sign in", '<h1>Sign in</h1>\n<form action="/login" method="post"><input name="user">'
                        '<input name="password" type="password"><button>Sign in</button></form>'),
            ("Topics", "<h1>Topics</h1>\n<ul class=\"tags\">"
             + "".join(f'<li><a href="/topics/{t}/">{t}</a></li>' for t in site.topics) + "</ul>"),
        ))
        url = f"https://{site.domain}/{_slug(title)}/?page={n}"
        return self._chrome_fetch(rng, site, url, title, main, "boilerplate_only", date)

    def short(self, rng: random.Random, n: int, date: datetime, _: object) -> _Fetch:
        site = rng.choice(_EN_SITES)
        title, text = rng.choice(_SHORT_PAGES)
        doc = f"<html><head><title>{title}</title></head><body><p>{text}</p></body></html>\n"
        url = f"https://{site.domain}/{_slug(title)}/{n}"
        page = SamplePage(self.warc, url, "short", "response", 200, "text/html", "en", "utf-8", "none", title, (text,))
        return _Fetch(200, "text/html", doc.encode("utf-8"), page)

    def list_heavy(self, rng: random.Random, n: int, date: datetime, _: object) -> _Fetch:
        site = rng.choice(_EN_SITES)
        t = _Text(rng, _EN_SLOTS[rng.choice(site.topics)])
        count = rng.randint(15, 30)
        title = _title_case(t.fill(f"{count} {{adj}} {{thing}} ideas for {{agent}}"))
        items = "".join(f"<li>{_esc(_cap(t.fill(t.draw('item', _EN_ITEMS))))}</li>\n" for _ in range(count))
        main = f'<article class="listicle">\n<h1>{_esc(title)}</h1>\n<ol>\n{items}</ol>\n</article>'
        url = f"https://{site.domain}/{site.section}/lists/{_slug(title)}-{n}.html"
        return self._chrome_fetch(rng, site, url, title, main, "list_heavy", date)

    def not_found(self, rng: random.Random, n: int, date: datetime, _: object) -> _Fetch:
        site = rng.choice(_EN_SITES)
        c = _CHROME["en"]
        url = f"https://{site.domain}/{site.section}/{n}/old-page.html"
        return self._chrome_fetch(rng, site, url, c[13], f"<h1>{c[13]}</h1>\n<p>{c[14]}</p>", "not_found", date,
                                  status=404)

    def redirect(self, rng: random.Random, n: int, date: datetime, _: object) -> _Fetch:
        site = rng.choice(_EN_SITES)
        path = f"{site.section}/{n}"
        url = f"http://{site.domain}/{path}"
        page = SamplePage(self.warc, url, "redirect", "response", 301, None)
        return _Fetch(301, None, b"", page, [("Location", f"https://{site.domain}/{path}/")], "identity")

    def non_html(self, rng: random.Random, n: int, date: datetime, what: str) -> _Fetch:
        t = _Text(rng, _EN_SLOTS[rng.choice(tuple(_EN_TOPICS))])
        titles = [_title_case(_cap(t.fill(t.draw("title", _EN_TITLES)))) for _ in range(rng.randint(3, 8))]
        transfer: str | None = "identity"
        if what == "pdf":
            url, ctype = f"https://cdn.example-site.test/reports/{n}/{_slug(titles[0])}.pdf", "application/pdf"
            body = _pdf([titles[0], ""] + [_en_sentence(t) for _ in range(6)])
        elif what == "png":
            url, ctype = f"https://cdn.example-site.test/images/{n}/photo.png", "image/png"
            body = _png(rng)
        elif what == "json":
            url, ctype = f"https://api.example-site.test/v1/articles?page={n}", "application/json; charset=utf-8"
            results = [{"id": n * 100 + k, "title": ti, "url": f"https://news.example-site.test/news/{_slug(ti)}"}
                       for k, ti in enumerate(titles)]
            body = json.dumps({"status": "ok", "page": n, "results": results}, indent=2).encode("utf-8")
            transfer = "gzip"
        else:
            url, ctype = f"https://files.example-site.test/notes/{n}.txt", "text/plain; charset=utf-8"
            body = (titles[0] + "\n\n" + "\n\n".join(_paragraph(t, None) for _ in range(3)) + "\n").encode("utf-8")
            transfer = None
        page = SamplePage(self.warc, url, "non_html", "response", 200, ctype, title=titles[0])
        return _Fetch(200, ctype, body, page, transfer=transfer)

    # ------------------------------------------------------------------ WARC
    def _http_headers(self, rng: random.Random, date: datetime, f: _Fetch) -> list[tuple[str, str]]:
        """Plausible server headers, then CC's rewrite (payloads are stored decoded)."""
        h = [("Date", format_datetime(date, usegmt=True)), ("Server", rng.choice(_SERVERS))]
        if f.content_type:
            h.append(("Content-Type", f.content_type))
        h += f.extra
        if f.body:
            modified = date - timedelta(days=rng.randint(1, 400), seconds=rng.randrange(86400))
            h.append(("Last-Modified", format_datetime(modified, usegmt=True)))
            h.append(("ETag", f'"{hashlib.sha1(f.body).hexdigest()[:20]}"'))
            h.append(("Cache-Control", rng.choice(("max-age=300", "public, max-age=3600", "no-cache"))))
        if f.content_type and f.content_type.startswith("text/html"):
            h.append(("Vary", "Accept-Encoding"))
            if rng.random() < 0.5:
                h.append(("X-Frame-Options", "SAMEORIGIN"))
            if rng.random() < 0.3:
                h.append(("Set-Cookie", f"sid={rng.getrandbits(64):016x}; Path=/; HttpOnly; SameSite=Lax"))
        transfer = f.transfer or rng.choices(("gzip", "chunked", "identity"), (6, 2, 2))[0]
        if transfer == "gzip":
            h += [("Content-Encoding", "gzip"), ("Content-Length", str(len(gzip_member(f.body))))]
        elif transfer == "chunked":
            h.append(("Transfer-Encoding", "chunked"))
        else:
            h.append(("Content-Length", str(len(f.body))))
        h.append(("Connection", rng.choice(("keep-alive", "close"))))
        return crawler_rewrite_headers(h, len(f.body))

    def write_warc(self, writer: WarcWriter, warc: int, filename: str) -> None:
        """Write one WARC file: warcinfo, then request, response (or revisit) and metadata per page."""
        self.warc = warc
        seed = self.seed
        t0 = self.start + timedelta(hours=3 * warc)
        writer.warcinfo(
            {
                "software": "raycorpus.demo.sample (synthetic sample crawl)",
                "hostname": f"sample-crawler-{warc:02d}",
                "format": "WARC File Format 1.1",
                "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
                "isPartOf": f"RAYCORPUS-SAMPLE-{seed}",
                "description": "Synthetic Common-Crawl-shaped sample: every page is generated, none is real",
                "operator": "raycorpus",
                "robots": "classic",
                "http-header-user-agent": "CCBot/2.0 (https://commoncrawl.org/faq/)",
            },
            filename,
            f"{t0:%Y-%m-%dT%H:%M:%SZ}",
            record_id(f"{seed}:{warc}:warcinfo"),
        )
        responses: list[tuple[str, str, str, _Fetch, list[tuple[str, str]]]] = []  # revisit candidates
        for j, (kind, detail) in enumerate(_plan(self.per, warc, random.Random(f"{seed}:plan:{warc}"))):
            rng = random.Random(f"{seed}:{warc}:{j}")
            date = t0 + timedelta(seconds=9 * j + rng.randrange(9))
            wdate = f"{date:%Y-%m-%dT%H:%M:%SZ}"
            ids = [record_id(f"{seed}:{warc}:{j}:{r}") for r in ("request", "response", "metadata")]
            fields = [("fetchTimeMs", str(rng.randint(30, 1500)))]
            if kind == "revisit":
                url, rid, rdate, src, headers = rng.choice(responses)
                headers = [("Date", format_datetime(date, usegmt=True)) if k == "Date" else (k, v) for k, v in headers]
                writer.request(url, wdate, ids[0])
                writer.revisit(url, wdate, rid, url, rdate, sha1_digest(src.body), 200, headers, ids[1])
                page = replace(src.page, warc=warc, kind="revisit", record_type="revisit", copy_of=url)
            else:
                # each page kind is the method of that name; n (unique in the crawl) keeps URLs distinct
                fetch: _Fetch = getattr(self, kind)(rng, warc * self.per + j, date, detail)
                page = fetch.page
                headers = self._http_headers(rng, date, fetch)
                writer.request(page.url, wdate, ids[0])
                writer.response(page.url, wdate, fetch.status, headers, fetch.body, ids[1])
                if page.status == 200 and page.charset:
                    responses.append((page.url, ids[1], wdate, fetch, headers))
                    iso3, name = _CLD2[page.lang or "en"]
                    cld2 = {"reliable": True, "text-bytes": len(fetch.body) // 3, "languages": [
                        {"code": page.lang, "code-iso-639-3": iso3, "text-covered": 0.97, "score": 901.0,
                         "name": name}]}
                    fields += [("charset-detected", _CHARSET_NAMES[page.charset]),
                               ("languages-cld2", json.dumps(cld2, separators=(",", ":")))]
            writer.metadata(page.url, wdate, ids[1], fields, ids[2])
            self.pages.append(page)

    def counts(self, n_warcs: int) -> dict[str, int]:
        pages = self.pages
        counts = {"warcs": n_warcs, "pages": len(pages), "records": n_warcs + 3 * len(pages),
                  "html_200": sum(p.record_type == "response" and p.status == 200 and p.charset is not None
                                  for p in pages)}
        for kind in _KINDS:
            counts[_COUNT_KEYS.get(kind, kind)] = sum(p.kind == kind for p in pages)
        for lang in ("en", *_LANGS):
            counts[f"lang:{lang}"] = sum(p.kind == "article" and p.lang == lang for p in pages)
        return counts


def write_sample_crawl(out_dir: str | Path, n_warcs: int = 4, pages_per_warc: int = 60, seed: int = 0) -> SampleCrawl:
    """Write ``n_warcs`` sample ``.warc.gz`` files and ``warc.paths`` into ``out_dir`` (created if needed).

    The files are byte-identical for the same arguments. ``counts`` has one entry per page kind
    (``articles`` in all languages, ``exact_copies``, ``near_copies``, ``spam``, ``boilerplate_only``,
    ``short``, ``list_heavy``, ``non_html``, ``not_found``, ``redirect``, ``revisit``), the original
    articles per language (``lang:en`` ...), and ``warcs``, ``pages``, ``records`` and ``html_200``
    (the HTTP-200 HTML responses a reader should yield).
    """
    if n_warcs < 1 or pages_per_warc < 1:
        raise ValueError("n_warcs and pages_per_warc must be at least 1")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    crawl = _Crawl(seed, pages_per_warc)
    paths = []
    for i in range(n_warcs):
        path = out / f"CC-SAMPLE-{i:05d}.warc.gz"
        with open(path, "wb") as f:
            crawl.write_warc(WarcWriter(f), i, path.name)
        paths.append(path)
    manifest = out / "warc.paths"
    manifest.write_text("".join(f"{p.name}\n" for p in paths), encoding="utf-8")
    return SampleCrawl(paths, manifest, crawl.counts(n_warcs), crawl.pages)
