"""An open-addressing uint64 -> document-ordinal hash table over numpy arrays, for LSH band keys.

Slots come in buckets of 8 keys (one 64-byte line). A key's probe sequence visits bucket
``h % B``, then steps by ``1 + (h >> 32) % (B - 1)`` (double hashing), where ``h`` is the
fmix64 of the key, so keys routed to one shard by ``key % N`` still spread out, and the
bucket count ``B`` is prime, so every sequence visits every bucket. Key 0 marks an empty
slot; a bucket fills front to back and nothing is deleted, so a lookup ends at the first
bucket that holds the key or has a free slot. A batch is probed in vectorised rounds,
each gathering one bucket per unresolved key.
"""

from __future__ import annotations

import numpy as np

from raycorpus.process.hashing import fmix64

#: Returned for a key that was not in the table.
NO_MATCH = np.uint64(2**64 - 1)

_WAYS = 8  # slots per bucket: one 64-byte line of keys, gathered and compared at once
_CHUNK = 1 << 20  # keys probed together; slot * _CHUNK + position must fit in an int64


def _is_prime(n: int) -> bool:
    """Deterministic Miller-Rabin for n < 3.3e24."""
    if n < 2:
        return False
    bases = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
    if n in bases:
        return True
    if any(n % p == 0 for p in bases):
        return False
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for a in bases:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def _next_prime(n: int) -> int:
    n = max(n, 3) | 1
    while not _is_prime(n):
        n += 2
    return n


def _row_bytes(mask: np.ndarray) -> np.ndarray:
    """A C-contiguous ``(m, 8)`` bool array as ``(m,)`` uint64: column ``j`` is bit ``8 * j``."""
    return mask.view("<u8")[:, 0]


class BandTable:
    """uint64 keys (never 0) -> document ordinals, first writer wins.

    Grows by ``growth`` (to the next prime bucket count) when an insert would pass
    ``max_load``, so the load stays in ``[max_load / growth, max_load]``; ``expected_keys``
    sizes it up front. The default ``growth=1.25`` keeps the load in ``[0.64, 0.8]``: a grown
    index never takes more than 1.25x its keys' slots at ``max_load`` (1.5 let it sink to 0.53,
    ~1.5x). ``value_dtype`` is ``np.uint64`` (16 bytes a slot) or ``np.uint32``
    (12 bytes a slot, for ordinals below 2**32). Not thread-safe.
    """

    def __init__(
        self,
        expected_keys: int = 0,
        max_load: float = 0.8,
        growth: float = 1.25,
        value_dtype: type[np.unsignedinteger] = np.uint64,
    ):
        if not 0.1 <= max_load <= 0.95 or growth <= 1.0:
            raise ValueError("need 0.1 <= max_load <= 0.95 and growth > 1")
        self.value_dtype = np.dtype(value_dtype)
        if self.value_dtype not in (np.dtype(np.uint32), np.dtype(np.uint64)):
            raise ValueError("value_dtype must be uint32 or uint64")
        self.max_load = max_load
        self.growth = growth
        self._size = 0
        self._alloc(_next_prime(int(max(expected_keys, _WAYS) / max_load / _WAYS) + 1))

    def _alloc(self, n_buckets: int) -> None:
        self._n_buckets = n_buckets
        self._keys = np.zeros(n_buckets * _WAYS, np.uint64)
        self._values = np.zeros(n_buckets * _WAYS, self.value_dtype)

    @property
    def capacity(self) -> int:
        """Slots (``_WAYS`` per bucket)."""
        return self._keys.size

    @property
    def load_factor(self) -> float:
        return self._size / self.capacity

    @property
    def nbytes(self) -> int:
        return self._keys.nbytes + self._values.nbytes

    def __len__(self) -> int:
        return self._size

    def query_and_insert(self, keys: np.ndarray, values: np.ndarray) -> np.ndarray:
        """For each key the value stored for it, or NO_MATCH; then store the absent keys.

        Processed as if one key at a time in order: a key repeated within the batch sees
        the value of its first occurrence.
        """
        keys, values = self._check(keys, values)
        out = np.empty(keys.size, np.uint64)
        self._insert(keys, values, out)
        return out

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        """The value stored for each key, or NO_MATCH; the table is not changed."""
        keys = np.asarray(keys)
        if keys.ndim != 1 or keys.dtype.kind not in "iu":
            raise ValueError("keys must be a 1-d integer array")
        keys = keys.astype(np.uint64, copy=False)
        out = np.full(keys.size, NO_MATCH, np.uint64)
        for i in range(0, keys.size, _CHUNK):
            out[i : i + _CHUNK] = self._probe(keys[i : i + _CHUNK])
        return out

    def _probe(self, keys: np.ndarray) -> np.ndarray:
        n_buckets = self._n_buckets
        buckets_keys = self._keys.reshape(-1, _WAYS)
        h = fmix64(keys.copy())
        bucket = (h % np.uint64(n_buckets)).astype(np.intp)
        step = ((h >> np.uint64(32)) % np.uint64(n_buckets - 1)).astype(np.intp) + 1
        out = np.full(keys.size, NO_MATCH, np.uint64)
        pos = np.arange(keys.size)
        want = keys
        while pos.size:
            rows = np.take(buckets_keys, bucket, axis=0)
            match = _row_bytes(rows == want[:, None])
            done = match != 0
            if done.any():
                out[pos[done]] = self._values[bucket[done] * _WAYS + (np.bitwise_count(match[done] - 1) >> 3)]
            go_on = ~done & (rows[:, -1] != 0)  # a bucket with a free slot ends the sequence
            pos, want, bucket, step = pos[go_on], want[go_on], bucket[go_on], step[go_on]
            bucket += step
            bucket[bucket >= n_buckets] -= n_buckets
        return out

    def insert_many(self, keys: np.ndarray, values: np.ndarray) -> None:
        """Bulk insert (first occurrence wins) without the answers; for rebuilding a table."""
        keys, values = self._check(keys, values)
        self._insert(keys, values, None)

    def to_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(keys uint64, values) of the stored entries, in slot order."""
        used = self._keys != 0
        return self._keys[used], self._values[used]

    @classmethod
    def from_arrays(cls, keys: np.ndarray, values: np.ndarray, **kwargs) -> BandTable:
        """A table holding ``keys -> values`` (as from :meth:`to_arrays`)."""
        table = cls(expected_keys=len(keys), **kwargs)
        table.insert_many(keys, values)
        return table

    def _check(self, keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        keys = np.asarray(keys)
        values = np.asarray(values)
        if keys.shape != values.shape or keys.ndim != 1:
            raise ValueError("keys and values must be 1-d arrays of one length")
        if keys.dtype.kind not in "iu" or values.dtype.kind not in "iu":
            raise TypeError("keys and values must be integer arrays")
        if keys.size and not keys.all():
            raise ValueError("key 0 is reserved for empty slots")
        limit = min(int(np.iinfo(self.value_dtype).max), int(NO_MATCH) - 1)
        if values.size and (int(values.min()) < 0 or int(values.max()) > limit):
            raise OverflowError(f"values must be in [0, {limit}] for {self.value_dtype} values")
        return keys.astype(np.uint64, copy=False), values.astype(self.value_dtype, copy=False)

    def _reserve(self, n_keys: int) -> None:
        """Grow (rehash) so that ``n_keys`` keys fit under ``max_load``."""
        if n_keys <= self.max_load * self.capacity:
            return
        n_buckets = self._n_buckets
        while n_keys > self.max_load * n_buckets * _WAYS:
            n_buckets = int(n_buckets * self.growth) + 1
        old_keys, old_values = self._keys, self._values
        self._alloc(_next_prime(n_buckets))
        fill = np.zeros(self._n_buckets, np.uint8)
        for i in range(0, old_keys.size, _CHUNK):
            used = old_keys[i : i + _CHUNK] != 0
            self._place_distinct(old_keys[i : i + _CHUNK][used], old_values[i : i + _CHUNK][used], fill)

    def _place_distinct(self, keys: np.ndarray, values: np.ndarray, fill: np.ndarray) -> None:
        """Rehash path: store distinct keys known to be absent; ``fill`` counts used slots per bucket.

        Without lookups or rivals: keys bound for one bucket take its next free slots in
        turn (sorted by bucket), and those that do not fit move on to their next bucket.
        """
        h = fmix64(keys.copy())
        n = keys.size
        bucket = (h % np.uint64(self._n_buckets)).astype(np.intp)
        step = ((h >> np.uint64(32)) % np.uint64(self._n_buckets - 1)).astype(np.intp) + 1
        pos = np.arange(n)
        while pos.size:
            order = np.sort(bucket * n + pos)
            bucket, pos = order // n, order % n
            idx = np.arange(pos.size)
            first = np.ones(pos.size, bool)
            np.not_equal(bucket[1:], bucket[:-1], out=first[1:])
            col = fill[bucket] + idx - np.maximum.accumulate(np.where(first, idx, 0))
            fits = col < _WAYS
            slot = bucket[fits] * _WAYS + col[fits]
            self._keys[slot] = keys[pos[fits]]
            self._values[slot] = values[pos[fits]]
            starts = np.flatnonzero(first)
            grown = fill[bucket[starts]] + np.diff(starts, append=pos.size)
            fill[bucket[starts]] = np.minimum(grown, _WAYS)
            pos, bucket = pos[~fits], bucket[~fits] + step[pos[~fits]]
            bucket[bucket >= self._n_buckets] -= self._n_buckets

    def _insert(self, keys: np.ndarray, values: np.ndarray, out: np.ndarray | None) -> None:
        """Grow for all keys, then probe them in chunks small enough that few share a bucket."""
        self._reserve(self._size + keys.size)
        chunk = min(_CHUNK, max(_WAYS, self._n_buckets // 2))
        for i in range(0, keys.size, chunk):
            answer = self._upsert(keys[i : i + chunk], values[i : i + chunk])
            if out is not None:
                out[i : i + chunk] = answer

    def _upsert(self, keys: np.ndarray, values: np.ndarray) -> np.ndarray:
        """query_and_insert for at most ``_CHUNK`` keys, the table already big enough."""
        n_buckets = self._n_buckets
        buckets_keys = self._keys.reshape(-1, _WAYS)
        h = fmix64(keys.copy())
        bucket = (h % np.uint64(n_buckets)).astype(np.intp)
        step = ((h >> np.uint64(32)) % np.uint64(n_buckets - 1)).astype(np.intp) + 1
        out = np.empty(keys.size, np.uint64)
        pos = np.arange(keys.size)  # unresolved keys, in batch order
        want = keys
        while pos.size:
            rows = np.take(buckets_keys, bucket, axis=0)
            match = _row_bytes(rows == want[:, None])  # a key is at most once in a bucket
            done = match != 0
            if done.any():  # the matching slot: byte j set in the row means column j
                out[pos[done]] = self._values[bucket[done] * _WAYS + (np.bitwise_count(match[done] - 1) >> 3)]
            used = np.bitwise_count(_row_bytes(rows != 0))  # a bucket fills front to back: its first free slot
            has_free = used < _WAYS
            advance = ~(has_free | done)  # full without the key: try the next bucket
            claim = np.flatnonzero(has_free & ~done)
            if claim.size:
                slot = bucket[claim] * _WAYS + used[claim]
                self._keys[slot] = want[claim]  # rivals for a slot: one write survives, the others retry
                won = self._keys[slot] == want[claim]
                done[claim[won]] = True
                self._claim(slot[won], pos[claim[won]], values, out)
            left = ~done
            pos, want, bucket, step = pos[left], want[left], bucket[left], step[left]
            bucket += step * advance[left]
            bucket[bucket >= n_buckets] -= n_buckets
        return out

    def _claim(self, slots: np.ndarray, pos: np.ndarray, values: np.ndarray, out: np.ndarray) -> None:
        """Store values for keys (batch positions ``pos``, increasing) that won empty ``slots``.

        Repeats of one key reach the same slot in the same round; the first occurrence
        stores its value and reports NO_MATCH, the later ones report that value.
        """
        order = np.sort(slots * _CHUNK + pos)  # by slot, then batch position
        slots, pos = order // _CHUNK, order % _CHUNK
        first = np.ones(slots.size, bool)
        np.not_equal(slots[1:], slots[:-1], out=first[1:])
        self._values[slots[first]] = values[pos[first]]
        out[pos[first]] = NO_MATCH
        self._size += int(np.count_nonzero(first))
        if not first.all():
            repeat = ~first
            first_pos = pos[first][np.cumsum(first) - 1]
            out[pos[repeat]] = values[first_pos[repeat]]


class KeySet:
    """A set of uint64 keys (paragraph keys): one sorted array plus a sorted run of the latest inserts, merged into
    it once the run reaches 1/16 of it (a merge of two sorted runs: timsort takes them as runs). 8 bytes a key, and
    up to 1/16 more while the run fills (a merge briefly holds both copies). Not thread-safe."""

    MIN_RUN = 4096

    def __init__(self) -> None:
        self._main = np.zeros(0, np.uint64)
        self._run = np.zeros(0, np.uint64)

    def __len__(self) -> int:
        return int(self._main.size + self._run.size)

    @property
    def nbytes(self) -> int:
        return self._main.nbytes + self._run.nbytes

    def keys(self) -> np.ndarray:
        """Every key, sorted."""
        return np.sort(np.concatenate([self._main, self._run]), kind="stable")

    def contains(self, keys: np.ndarray) -> np.ndarray:
        """A bool per key: it is in the set."""
        keys = np.asarray(keys, np.uint64)
        return in_sorted(self._main, keys) | in_sorted(self._run, keys)

    def add(self, keys: np.ndarray) -> None:
        """Add the keys (any order; ones already in the set are ignored)."""
        keys = np.unique(np.asarray(keys, np.uint64))
        keys = keys[~self.contains(keys)]
        if not keys.size:
            return
        self._run = np.sort(np.concatenate([self._run, keys]), kind="stable")
        if self._run.size >= max(self.MIN_RUN, self._main.size // 16):
            self._main = np.sort(np.concatenate([self._main, self._run]), kind="stable")
            self._run = np.zeros(0, np.uint64)


def in_sorted(table: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """A bool per key: it is in ``table`` (sorted, unique)."""
    if not table.size:
        return np.zeros(keys.size, bool)
    at = np.minimum(np.searchsorted(table, keys), table.size - 1)
    return table[at] == keys
