"""The training reader: disjoint rank x worker slots, deterministic shuffling, exact resume, every format."""

from __future__ import annotations

import numpy as np
import pytest

from raycorpus.training.loader import TokenWindows
from tests.support.shards import build_token_shards, with_cluster_sizes

CTX = 32


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("corpus")
    _, state, _ = build_token_shards(out, 50_000, formats=("megatron", "datatrove", "packed"), ctx_len=CTX)
    return out, state


def _all(windows: TokenWindows, epoch: int = 0) -> list[bytes]:
    return [x.tobytes() + y[-1:].tobytes() for x, y in windows.iter_windows(epoch)]


def test_two_ranks_two_workers_are_disjoint_and_cover_everything(corpus):
    out, _ = corpus
    whole = _all(TokenWindows(out, CTX, shuffle=False, drop_last=False))
    slots = [_all(TokenWindows(out, CTX, rank=r, world_size=2, worker=w, num_workers=2, seed=7, drop_last=False))
             for r in range(2) for w in range(2)]
    seen = [w for s in slots for w in s]
    assert len(seen) == len(whole) == len(set(whole))  # nothing twice, nothing left out
    assert sorted(seen) == sorted(whole)
    even = [TokenWindows(out, CTX, rank=r, world_size=2, worker=w, num_workers=2) for r in range(2) for w in range(2)]
    assert len({len(e) for e in even}) == 1 and len(even[0]) == len(whole) // 4  # drop_last: equal steps


def test_windows_are_consecutive_tokens_with_shifted_targets(corpus):
    out, _ = corpus
    flat = np.concatenate([np.fromfile(p, "<u2") for p in sorted((out / "shards").glob("*.tokens"))])
    x, y = next(TokenWindows(out, CTX, shuffle=False).iter_windows())
    assert np.array_equal(x, flat[:CTX]) and np.array_equal(y, flat[1 : CTX + 1]) and x.dtype == np.int64


def test_shuffle_depends_on_seed_and_epoch_only(corpus):
    out, _ = corpus
    a = _all(TokenWindows(out, CTX, seed=3))
    assert a == _all(TokenWindows(out, CTX, seed=3))
    assert a != _all(TokenWindows(out, CTX, seed=4)) and a != _all(TokenWindows(out, CTX, seed=3), epoch=1)
    assert sorted(a) == sorted(_all(TokenWindows(out, CTX, seed=3), epoch=1))


def test_resume_at_step_k_gives_the_same_remaining_stream(corpus):
    out, _ = corpus
    w = TokenWindows(out, CTX, rank=1, world_size=2, seed=11)
    stream = [x.tobytes() for x, _ in w.iter_windows(0, 0, epochs=2)]
    for k in (0, 1, 5, len(w) - 1, len(w) + 3):
        epoch, step = divmod(k, len(w))
        again = TokenWindows(out, CTX, rank=1, world_size=2, seed=11)
        rest = [x.tobytes() for x, _ in again.iter_windows(epoch, step, epochs=2 - epoch)]
        assert rest == stream[k:], k
    assert w.step_for_tokens(5 * CTX) == 5


@pytest.mark.parametrize("fmt", ["raycorpus", "megatron", "datatrove", "packed"])
def test_every_format_gives_the_same_windows(corpus, fmt):
    out, _ = corpus
    ref = _all(TokenWindows(out, CTX, fmt="raycorpus", seed=5))
    assert _all(TokenWindows(out, CTX, fmt=fmt, seed=5)) == ref
    assert _all(TokenWindows(out / {"raycorpus": "shards"}.get(fmt, fmt), CTX, seed=5)) == ref


def test_bad_arguments_are_refused(corpus, tmp_path):
    out, _ = corpus
    with pytest.raises(ValueError, match="ctx_len 32"):
        TokenWindows(out, 64, fmt="packed")
    with pytest.raises(ValueError, match="out of range"):
        TokenWindows(out, CTX, rank=2, world_size=2)
    with pytest.raises(FileNotFoundError, match="no shards/"):
        TokenWindows(tmp_path, CTX)


def test_torch_dataset_splits_across_dataloader_workers(corpus):
    torch = pytest.importorskip("torch", reason="torch is not installed (pip install -e '.[test]' installs it)")
    from raycorpus.training.loader import TorchWindows

    out, _ = corpus
    ds = TorchWindows(out, CTX, seed=2, shuffle=True)
    n = len(TokenWindows(out, CTX, worker=0, num_workers=2))
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2)
    got = []
    for i, (x, y) in enumerate(loader):
        got.append(x.numpy().tobytes() + y.numpy()[-1:].tobytes())
        if i == 4 * n - 1:  # two epochs' worth from two workers
            break
    one_epoch = set(_all(TokenWindows(out, CTX, seed=2, drop_last=False)))
    assert set(got) <= one_epoch | set(_all(TokenWindows(out, CTX, seed=2, drop_last=False), epoch=1))
    assert len(set(got[: 2 * n])) == 2 * n  # the two workers' first epoch never repeats a window


def test_rehydrate_gives_each_document_its_fineweb2_weight_in_passes(tmp_path_factory):
    cycle = [1, 2, 3, 4, 5, 100, 1000]  # FineWeb-2's weights: 1, 2, 3, 3, 5, 8, 1
    out = tmp_path_factory.mktemp("clusters")
    docs = with_cluster_sizes(out, lambda k: cycle[k % len(cycle)])
    plain = TokenWindows(out, CTX, shuffle=False)
    tw = TokenWindows(out, CTX, shuffle=False, rehydrate=True)
    assert [f.path for f in tw.files[: len(plain.files)]] == [f.path for f in plain.files]  # shards, then passes
    weight = [1, 2, 3, 3, 5, 8, 1]
    for k in range(2, 9):  # pass k: the documents given k times or more, in order, read as one stream
        expect = np.concatenate([d for n, d in enumerate(docs) if weight[n % len(cycle)] >= k])
        passes = [f for f in tw.files[len(plain.files):] if str(f.path).endswith(f"#pass{k}")]
        got = np.concatenate([np.concatenate([f.window(i, CTX + 1) for i in range(f.windows(CTX + 1))])
                              for f in passes])
        per_file = [np.concatenate([d for n, d in enumerate(docs) if weight[n % len(cycle)] >= k and n in span])
                    for span in _spans(out, plain)]
        assert got.tobytes() == b"".join(p[: len(p) // (CTX + 1) * (CTX + 1)].astype(got.dtype).tobytes()
                                          for p in per_file)
        assert sum(len(p) for p in per_file) == len(expect)
    assert len(tw) > len(plain) * 2


def _spans(out, plain: TokenWindows) -> list[range]:
    """The documents (numbered over the corpus) of each shard."""
    spans, n = [], 0
    for f in plain.files:
        spans.append(range(n, n + len(f.ends)))
        n += len(f.ends)
    return spans


def test_rehydrate_needs_cluster_sizes(corpus):
    out, _ = corpus
    with pytest.raises(FileNotFoundError, match="no clusters/"):
        TokenWindows(out, CTX, rehydrate=True)
    with pytest.raises(ValueError, match="not megatron/"):
        TokenWindows(out, CTX, fmt="megatron", rehydrate=True)
