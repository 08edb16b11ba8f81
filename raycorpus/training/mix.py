"""Data mixing: several built corpora (domains) into one reproducible training stream.

``raycorpus mix MIX.yaml`` computes the weights (explicit, or temperature ``p_i ∝ n_i^alpha``
over domain sizes in tokens), prints for the token budget the tokens drawn per domain and
the epochs each is seen (``N · w_i / |D_i|``), warns past ``max_epochs`` (Muennighoff et al.
2023: returns diminish beyond ~4), and writes a deterministic sample order: one domain
index per training window, drawn with a seeded RNG; a domain that reaches ``max_epochs``
is exhausted, dropped, and the remaining weights renormalised. :class:`MixedWindows`
replays that order, split across ranks and workers like :class:`raycorpus.training.loader.TokenWindows`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from raycorpus.training.loader import TokenWindows

ORDER_FILE = "order.npy"
PLAN_FILE = "mix.json"


class Domain(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    path: str = Field(description="a built corpus (output folder) or one of its format folders")
    weight: float | None = Field(None, gt=0, description="explicit weight (all domains or none)")
    rehydrate: bool = Field(False, description="upsample documents by their duplicate-cluster size with FineWeb-2's "
                            "weights (a raycorpus output built with dedup in filter mode; its size counts the copies)")
    rehydrate_with: list[str] = Field([], description="outputs built later against this one (dedup.against): their "
                                      "duplicates of its documents count in its clusters too")


class MixConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    domains: list[Domain] = Field(min_length=1)
    tokens: int = Field(ge=1, description="training token budget")
    ctx_len: int = Field(ge=1)
    temperature: float = Field(1.0, ge=0, description="alpha of p_i ∝ n_i^alpha when no weights are given")
    max_epochs: float = Field(4.0, gt=0, description="epoch ceiling per domain: warn, then exhaust it")
    seed: int = 0
    format: str = "auto"
    output: str = Field(description="folder for mix.json and order.npy")

    @model_validator(mode="after")
    def _weights_all_or_none(self) -> MixConfig:
        given = [d.weight is not None for d in self.domains]
        if any(given) and not all(given):
            raise ValueError("give a weight for every domain, or for none (temperature weights)")
        if len({d.name for d in self.domains}) != len(self.domains):
            raise ValueError("domain names must be distinct")
        return self


def temperature_weights(sizes, alpha: float) -> np.ndarray:
    """``p_i ∝ n_i^alpha`` (alpha 1: proportional to size; 0: uniform)."""
    p = np.asarray(sizes, np.float64) ** alpha
    return p / p.sum()


def epochs_seen(budget: float, weights, sizes) -> np.ndarray:
    """How many times each domain is seen: ``N · w_i / |D_i|``."""
    return budget * np.asarray(weights, np.float64) / np.asarray(sizes, np.float64)


def draw_order(weights, capacity, n_samples: int, seed: int) -> np.ndarray:
    """Domain index per sample (uint16); a domain stops at ``capacity[i]`` samples and the rest renormalise."""
    w = np.asarray(weights, np.float64).copy()
    left = np.asarray(capacity, np.int64).copy()
    rng = np.random.default_rng(seed)
    out = np.empty(n_samples, np.uint16)
    done = 0
    while done < n_samples:
        if not (w > 0).any():
            raise ValueError(f"every domain is exhausted after {done:,} of {n_samples:,} samples: raise max_epochs "
                             "or lower the token budget")
        chunk = rng.choice(len(w), size=min(n_samples - done, 1 << 16), p=w / w.sum())
        counts = np.cumsum(np.eye(len(w), dtype=np.int64)[chunk], axis=0)
        over = (counts > left).any(axis=1)
        keep = int(np.argmax(over)) if over.any() else len(chunk)  # up to the first draw past a capacity
        out[done : done + keep] = chunk[:keep]
        done += keep
        left -= np.bincount(chunk[:keep], minlength=len(w))
        w[left <= 0] = 0.0
    return out


def plan(cfg: MixConfig) -> dict:
    windows = [TokenWindows(d.path, cfg.ctx_len, fmt=cfg.format, shuffle=False, rehydrate=d.rehydrate,
                            rehydrate_with=tuple(d.rehydrate_with)).total for d in cfg.domains]
    sizes = np.array(windows, np.float64) * cfg.ctx_len
    if cfg.domains[0].weight is not None:
        weights = np.array([d.weight for d in cfg.domains], np.float64)
        weights /= weights.sum()
    else:
        weights = temperature_weights(sizes, cfg.temperature)
    ep = epochs_seen(cfg.tokens, weights, sizes)
    warnings = [f"domain {d.name!r} would be seen {e:.2f} times (> max_epochs {cfg.max_epochs:g}): it is capped "
                "there and the other domains renormalised" for d, e in zip(cfg.domains, ep, strict=True)
                if e > cfg.max_epochs]
    return {
        "domains": [d.name for d in cfg.domains],
        "paths": [d.path for d in cfg.domains],
        "rehydrate": [d.rehydrate for d in cfg.domains],
        "rehydrate_with": [d.rehydrate_with for d in cfg.domains],
        "windows": windows,
        "size_tokens": [int(s) for s in sizes],
        "weights": [round(float(w), 6) for w in weights],
        "planned_tokens": [round(cfg.tokens * float(w)) for w in weights],
        "planned_epochs": [round(float(e), 4) for e in ep],
        "warnings": warnings,
    }


def build_mix(cfg: MixConfig) -> dict:
    """Plan, draw the order, write ``mix.json`` and ``order.npy``; return the plan with what was drawn."""
    p = plan(cfg)
    n_samples = -(-cfg.tokens // cfg.ctx_len)
    capacity = np.floor(np.array(p["windows"]) * cfg.max_epochs).astype(np.int64)
    order = draw_order(p["weights"], capacity, n_samples, cfg.seed)
    drawn = np.bincount(order, minlength=len(cfg.domains))
    p.update({
        "ctx_len": cfg.ctx_len, "format": cfg.format, "seed": cfg.seed, "samples": n_samples,
        "drawn_tokens": [int(n) * cfg.ctx_len for n in drawn],
        "drawn_epochs": [round(float(n) / w, 4) for n, w in zip(drawn, p["windows"], strict=True)],
    })
    out = Path(cfg.output)
    out.mkdir(parents=True, exist_ok=True)
    np.save(out / ORDER_FILE, order, allow_pickle=False)
    (out / PLAN_FILE).write_text(json.dumps(p, indent=1) + "\n")
    return p


def load_mix_config(path: str | Path) -> MixConfig:
    from raycorpus.config import ConfigError, format_validation_error

    p = Path(path)
    try:
        raw = yaml.safe_load(p.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"mix config {p}: {e}") from None
    try:
        cfg = MixConfig.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(format_validation_error(e, str(p))) from None
    base = p.parent.resolve()
    domains = [d.model_copy(update={"path": str((base / d.path).resolve()),
                                    "rehydrate_with": [str((base / p).resolve()) for p in d.rehydrate_with]})
               for d in cfg.domains]
    return cfg.model_copy(update={"domains": domains, "output": str((base / cfg.output).resolve())})


def format_plan(p: dict) -> str:
    lines = [f"{'domain':<16}{'tokens':>14}{'weight':>9}{'planned':>14}{'epochs':>8}{'drawn':>14}{'epochs':>8}"]
    for i, name in enumerate(p["domains"]):
        lines.append(f"{name:<16}{p['size_tokens'][i]:>14,}{p['weights'][i]:>9.3f}{p['planned_tokens'][i]:>14,}"
                     f"{p['planned_epochs'][i]:>8.2f}{p['drawn_tokens'][i]:>14,}{p['drawn_epochs'][i]:>8.2f}")
    lines += [f"WARNING {w}" for w in p["warnings"]]
    return "\n".join(lines)


class MixedWindows:
    """Replays a mix: slot ``rank * num_workers + worker`` of ``S`` takes every ``S``-th sample of the order;
    the ``j``-th sample of a domain is that domain's ``j``-th window (its epochs shuffled by the mix seed)."""

    def __init__(self, mix_dir: str | Path, *, rank: int = 0, world_size: int = 1, worker: int = 0,
                 num_workers: int = 1):
        mix_dir = Path(mix_dir)
        p = json.loads((mix_dir / PLAN_FILE).read_text())
        self.order = np.load(mix_dir / ORDER_FILE)
        rehydrate = p.get("rehydrate") or [False] * len(p["paths"])  # (a mix.json from before rehydration)
        later = p.get("rehydrate_with") or [[]] * len(p["paths"])
        self.domains = [TokenWindows(path, p["ctx_len"], fmt=p["format"], seed=p["seed"], rehydrate=r,
                                     rehydrate_with=tuple(w)) for path, r, w in zip(p["paths"], rehydrate, later,
                                                                                     strict=True)]
        self.slot, self.slots = rank * num_workers + worker, world_size * num_workers
        self.occurrence = np.empty(self.order.size, np.int64)
        for d in range(len(self.domains)):
            where = np.flatnonzero(self.order == d)
            self.occurrence[where] = np.arange(where.size)

    def __len__(self) -> int:
        return self.order.size // self.slots

    def iter_windows(self, step: int = 0):
        for s in range(step, len(self)):
            g = self.slot + s * self.slots
            d = int(self.order[g])
            dom = self.domains[d]
            epoch, i = divmod(int(self.occurrence[g]), dom.total)
            f, k = dom.locate(epoch, i)
            w = np.asarray(dom.files[f].window(k, dom.width), np.int64)
            yield d, w[:-1], w[1:]
