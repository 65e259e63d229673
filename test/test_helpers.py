"""helpers.record: the dataclass subset the package's records use, with dataclass semantics."""

import dataclasses
import pathlib
import pickle
import subprocess
import sys

import pytest

from unigrad.helpers import record


@record(frozen=True, slots=True)
class Point:
    x: int
    y: int = 0
    tags: tuple = ()


@record
class Counter:
    name: str
    size: int = dataclasses.field(init=False)
    items: list = dataclasses.field(default_factory=list)

    def __post_init__(self) -> None:
        self.size = len(self.name)


@record(frozen=True, slots=True, eq=False)
class Interned:
    name: str

    def __repr__(self) -> str:
        return f"Interned<{self.name}>"


def test_init_defaults_repr_eq_hash_like_dataclass():
    p = Point(1)
    assert (p.x, p.y, p.tags) == (1, 0, ())
    assert repr(p) == "Point(x=1, y=0, tags=())"
    assert p == Point(1, 0, ()) and p != Point(1, 2) and p != (1, 0, ())
    assert hash(p) == hash(Point(x=1)) and {p: "a"}[Point(1)] == "a"
    # the fields, and the hash kept once computed (a UOp's arg is hashed at each node built and dropped)
    assert Point.__slots__ == ("x", "y", "tags", "_record_hash") and not hasattr(p, "__dict__")
    assert Point.__match_args__ == ("x", "y", "tags")
    assert p._record_hash == hash((1, 0, ())) and Point(2)._record_hash == -1  # (-1: not computed yet)


def test_kept_hash_is_not_pickled():
    """A copy in another process must hash its own way (a str's hash differs between processes): the kept hash is
    recomputed after unpickling, and equal records hash alike."""
    p = Point(1, 2, ("a",))
    hash(p)
    q = pickle.loads(pickle.dumps(p))
    assert q == p and q._record_hash == -1 and hash(q) == hash(p)
    mod = Point.__module__
    code = (
        f"import importlib, pickle; t = importlib.import_module({mod!r}); q = pickle.loads({pickle.dumps(p)!r}); "
        "print(q == t.Point(1, 2, ('a',)), hash(q) == hash(t.Point(1, 2, ('a',))))"
    )
    root = pathlib.Path(__file__).parents[mod.count(".")]  # where `mod` imports from
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert out.stdout.split() == ["True", "True"]


def test_missing_or_unknown_argument_is_a_type_error():
    with pytest.raises(TypeError):
        Point()
    with pytest.raises(TypeError):
        Point(1, z=3)


def test_frozen_refuses_assignment_and_deletion():
    p = Point(1)
    with pytest.raises(dataclasses.FrozenInstanceError, match="'x'"):
        p.x = 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        del p.y


def test_frozen_slots_record_pickles():
    p = Point(3, 4, ("a",))
    assert pickle.loads(pickle.dumps(p)) == p


def test_mutable_record_factory_init_false_and_post_init():
    a, b = Counter("abc"), Counter("abc")
    assert a.size == 3 and a.items == [] and a.items is not b.items  # one new list per instance
    assert a == b and repr(a) == "Counter(name='abc', size=3, items=[])"
    assert Counter.__hash__ is None  # mutable with eq: unhashable, as a dataclass
    a.items.append(1)
    assert a != b
    assert Counter("x", items=[5]).items == [5]


def test_eq_false_keeps_identity_and_class_methods():
    a, b = Interned("f"), Interned("f")
    assert a != b and a == a and hash(a) != hash(b)
    assert repr(a) == "Interned<f>"


def test_import_builds_no_dataclass_and_no_beam_search():
    """Why record exists: `import unigrad` builds every record (32 of them), and dataclasses took about 1 ms
    each, half the import. Counted, not timed: no dataclass is processed while importing the package, and the
    BEAM search (a thread pool, JSON, logging) loads only under BEAM."""
    code = (
        "import dataclasses; n = [0]; orig = dataclasses._process_class\n"
        "def count(*a, **k):\n    n[0] += 1; return orig(*a, **k)\n"
        "dataclasses._process_class = count\nimport sys, unigrad\nprint(n[0], 'unigrad.runtime.beam' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["0", "False"]


def test_a_record_does_not_inherit_record_fields():
    with pytest.raises(TypeError, match="does not inherit"):

        @record
        class Point3(Point):
            z: int = 0


def test_a_mutable_default_is_refused_as_in_dataclasses():
    with pytest.raises(ValueError, match="mutable default for 'items'"):

        @record
        class Bag:
            items: list = []  # noqa: RUF012


def test_counting_inside_a_count_does_not_deadlock():
    """A garbage collection inside GlobalCounters' lock (launched() folds its kernels there) can free a Buffer, whose
    __del__ counts memory under the same lock: the lock is re-entrant, so the count finishes."""
    import threading

    from unigrad import helpers
    from unigrad.helpers import GlobalCounters

    def nested() -> None:
        with helpers._counters_lock:
            GlobalCounters.allocated(0)

    t = threading.Thread(target=nested, daemon=True)
    t.start()
    t.join(5)
    assert not t.is_alive(), "GlobalCounters deadlocked on a count inside a count"
