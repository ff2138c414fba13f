"""The run history: every run of the suite (any stage) in one SQLite file, for what a single run cannot see: what
changed since the last green run, a figure that fell under its baseline, each figure's trend (gb10check/trends.py).

Where: --history PATH, else $GB10CHECK_HISTORY, else $XDG_DATA_HOME/gb10check/history.sqlite (~/.local/share/...);
`off` (either way) records nothing. Each run is one transaction (BEGIN IMMEDIATE), in WAL mode with a busy timeout, so
concurrent runs wait for each other and a writer killed half-way leaves nothing of its run. The schema's version is
PRAGMA user_version; MIGRATIONS bring an older file up, one step each. A file that is not a sound SQLite database, or
one of a newer schema than this gb10check knows, stops with a one-line HistoryError and is never written to.
"""

import json
import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

from .errors import UserError

OFF = "off"
BUSY_TIMEOUT_S = 30.0  # another run's transaction is one run's rows: milliseconds, seconds on a loaded machine

# Each entry brings the file from user_version i to i + 1.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE runs (id INTEGER PRIMARY KEY, started REAL NOT NULL, finished REAL NOT NULL, cluster TEXT NOT NULL,
                       cluster_file TEXT NOT NULL, cluster_sha256 TEXT NOT NULL, stages TEXT NOT NULL,
                       complete_stages TEXT NOT NULL, green INTEGER NOT NULL, counts TEXT NOT NULL);
    CREATE INDEX runs_cluster ON runs (cluster, id);
    CREATE TABLE outcomes (run INTEGER NOT NULL REFERENCES runs (id), test TEXT NOT NULL, stage TEXT, outcome TEXT NOT NULL);
    CREATE TABLE findings (run INTEGER NOT NULL REFERENCES runs (id), test TEXT NOT NULL, code TEXT NOT NULL,
                           severity TEXT NOT NULL, "where" TEXT NOT NULL, seen TEXT NOT NULL, expected TEXT NOT NULL,
                           fix TEXT NOT NULL);
    CREATE TABLE figures (run INTEGER NOT NULL REFERENCES runs (id), what TEXT NOT NULL, "where" TEXT NOT NULL,
                          value REAL, text TEXT, unit TEXT NOT NULL);
    CREATE INDEX figures_what ON figures (what, "where", run);
    CREATE TABLE versions (run INTEGER NOT NULL REFERENCES runs (id), node TEXT NOT NULL, what TEXT NOT NULL,
                           value TEXT NOT NULL);
    CREATE INDEX versions_run ON versions (run);
    """,
)
SCHEMA = len(MIGRATIONS)


class HistoryError(UserError):
    """The history file cannot be used; the message names it and the fix. The file is left as it is."""


def default_path() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "gb10check" / "history.sqlite"


def chosen(given: str | None) -> Path | None:
    """The history file a run uses (None: off): --history, else $GB10CHECK_HISTORY, else the default."""
    value = given or os.environ.get("GB10CHECK_HISTORY") or ""
    if value.strip().lower() == OFF:
        return None
    return Path(os.path.expanduser(value)) if value.strip() else default_path()


def green(outcomes: dict[str, str]) -> bool:
    """A fully passing run: something ran, nothing failed, errored or went unchecked."""
    return bool(outcomes) and not {"failed", "error", "not checked"} & set(outcomes.values())


@dataclass
class Recorded:
    """One run as stored."""

    id: int
    started: float
    finished: float
    cluster: str
    cluster_file: str
    cluster_sha256: str
    stages: list[str]
    complete_stages: list[str]
    green: bool
    counts: dict[str, int]
    outcomes: list[tuple[str, str | None, str]] = field(default_factory=list)  # (test, stage, outcome)
    findings: list[dict] = field(default_factory=list)
    figures: list[tuple[str, str, float | str, str]] = field(default_factory=list)
    versions: dict[str, dict[str, str]] = field(default_factory=dict)


class History:
    """An open history file. open() checks and migrates it; every other method reads, record() writes one run."""

    def __init__(self, path: Path, db: sqlite3.Connection):
        self.path, self.db = path, db

    @classmethod
    def open(cls, path: Path) -> "History":
        path = Path(path)
        where = f"history file {path}"
        fix = (f"move it aside (a new one is made in its place), or choose another with --history PATH or "
               f"GB10CHECK_HISTORY (`off`: record nothing)")
        if path.exists() and not path.is_file():
            raise HistoryError(f"{where}: not a file; fix: {fix}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise HistoryError(f"{where}: cannot open: {exc}; fix: {fix}") from None
        try:
            db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA:
                raise HistoryError(f"{where}: schema {version} is newer than this gb10check's {SCHEMA} (written by a newer "
                                   f"gb10check); fix: upgrade gb10check, or {fix}")
            sound = db.execute("PRAGMA quick_check").fetchall()
            if sound != [("ok",)]:
                raise HistoryError(f"{where}: damaged ({'; '.join(r[0] for r in sound[:2])}); fix: {fix}")
            if version < SCHEMA:
                cls._migrate(db)
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                db.execute("PRAGMA journal_mode = WAL")
        except sqlite3.DatabaseError as exc:
            db.close()
            raise HistoryError(f"{where}: not a gb10check history ({exc}); fix: {fix}") from None
        except HistoryError:
            db.close()
            raise
        return cls(path, db)

    @staticmethod
    def _migrate(db: sqlite3.Connection) -> None:
        """Each missing step, in one transaction; another run migrating at once waits, then finds nothing to do."""
        db.execute("BEGIN IMMEDIATE")
        try:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            for step in range(version, SCHEMA):
                for statement in MIGRATIONS[step].split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute(f"PRAGMA user_version = {step + 1}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self.db.close()

    # ---- writing: one run, one transaction ----

    def record(self, *, started: float, cluster: str, cluster_file: str, cluster_sha256: str, outcomes: dict[str, str],
               stages: dict[str, str], complete_stages: list[str], findings: dict[str, list[dict]],
               measured: list[tuple], versions: dict[str, dict[str, str]], finished: float | None = None) -> int:
        """Store one run; its id. All of it or nothing (a writer killed half-way leaves no row of its run)."""
        counts: dict[str, int] = {}
        for o in outcomes.values():
            counts[o] = counts.get(o, 0) + 1
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            run = db.execute("INSERT INTO runs (started, finished, cluster, cluster_file, cluster_sha256, stages, "
                             "complete_stages, green, counts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                             (started, finished or time.time(), cluster, cluster_file, cluster_sha256,
                              ",".join(sorted(set(stages.values()))), ",".join(complete_stages), int(green(outcomes)),
                              json.dumps(counts, sort_keys=True))).lastrowid
            _rows(db, run, outcomes, stages, findings, measured, versions)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return run

    # ---- reading ----

    def runs(self, cluster: str | None = None, limit: int = 50) -> list[Recorded]:
        """The newest runs first (of one cluster when named: its history name, `gb10[a+b]`, or its name alone for
        every node set it had), without their rows."""
        where, args = ("WHERE cluster = ? OR substr(cluster, 1, ?) = ?", (cluster, len(cluster) + 1, cluster + "[")) \
            if cluster else ("", ())
        rows = self.db.execute(f"SELECT * FROM runs {where} ORDER BY id DESC LIMIT ?", (*args, limit)).fetchall()
        return [_run(r) for r in rows]

    def show(self, run_id: int) -> Recorded:
        row = self.db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise HistoryError(f"history file {self.path}: no run {run_id}; fix: `gb10check history` lists the runs")
        got = _run(row)
        got.outcomes = self.db.execute("SELECT test, stage, outcome FROM outcomes WHERE run = ? ORDER BY rowid", (run_id,)).fetchall()
        got.findings = [dict(zip(("test", "code", "severity", "where", "seen", "expected", "fix"), r)) for r in self.db.execute(
            'SELECT test, code, severity, "where", seen, expected, fix FROM findings WHERE run = ? ORDER BY rowid', (run_id,))]
        got.figures = [(w, where, v if t is None else t, u) for w, where, v, t, u in self.db.execute(
            'SELECT what, "where", value, text, unit FROM figures WHERE run = ? ORDER BY rowid', (run_id,))]
        for node, what, value in self.db.execute("SELECT node, what, value FROM versions WHERE run = ? ORDER BY rowid", (run_id,)):
            got.versions.setdefault(node, {})[what] = value
        return got

    def last_green_versions(self, cluster: str, before: int | None = None) -> tuple[int, dict[str, dict[str, str]]] | None:
        """The newest fully passing run of the cluster that recorded versions (before run `before`): (id, versions)."""
        row = self.db.execute("SELECT id FROM runs WHERE cluster = ? AND green = 1 AND id < ? AND EXISTS "
                              "(SELECT 1 FROM versions WHERE run = runs.id) ORDER BY id DESC LIMIT 1",
                              (cluster, before if before is not None else 2 ** 62)).fetchone()
        return (row[0], self.show(row[0]).versions) if row else None

    def versions_as_of(self, cluster: str, run_id: int) -> dict[str, dict[str, str]]:
        """Each node's versions as last recorded by run `run_id` or earlier (a run that read none leaves them as they were)."""
        out: dict[str, dict[str, str]] = {}
        for node, what, value in self.db.execute(
                "SELECT node, what, value FROM versions JOIN runs ON runs.id = versions.run WHERE runs.cluster = ? "
                "AND runs.id <= ? ORDER BY runs.id, versions.rowid", (cluster, run_id)):
            out.setdefault(node, {})[what] = value
        return out

    def figure_runs(self, cluster: str, what: str, where: str, green_only: bool, limit: int,
                    before: int | None = None) -> list[tuple[int, float]]:
        """(run id, value) of one figure in the cluster's runs (passing ones only, when asked), oldest first."""
        rows = self.db.execute(
            'SELECT runs.id, figures.value FROM figures JOIN runs ON runs.id = figures.run WHERE runs.cluster = ? AND '
            'figures.what = ? AND figures."where" = ? AND figures.value IS NOT NULL AND runs.id < ? '
            + ("AND runs.green = 1 " if green_only else "") + "ORDER BY runs.id DESC LIMIT ?",
            (cluster, what, where, before if before is not None else 2 ** 62, limit)).fetchall()
        return list(reversed(rows))


def _rows(db: sqlite3.Connection, run: int, outcomes, stages, findings, measured, versions) -> None:
    """A run's rows, inside its transaction."""
    db.executemany("INSERT INTO outcomes VALUES (?, ?, ?, ?)", [(run, t, stages.get(t), o) for t, o in outcomes.items()])
    db.executemany("INSERT INTO findings VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                   [(run, t, f["code"], f["severity"], f["where"], f["seen"], f["expected"], f["fix"])
                    for t, fs in findings.items() for f in fs])
    _figures(db, run, measured)
    db.executemany("INSERT INTO versions VALUES (?, ?, ?, ?)",
                   [(run, node, what, str(value)) for node, theirs in versions.items() for what, value in theirs.items()])


def _figures(db: sqlite3.Connection, run: int, measured) -> None:
    number = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)  # noqa: E731
    db.executemany("INSERT INTO figures VALUES (?, ?, ?, ?, ?, ?)",
                   [(run, w, where, float(v) if number(v) else None, None if number(v) else str(v), u)
                    for w, where, v, u in measured])


def _run(row) -> Recorded:
    id_, started, finished, cluster, cluster_file, sha, stages, complete, is_green, counts = row
    return Recorded(id_, started, finished, cluster, cluster_file, sha, [s for s in stages.split(",") if s],
                    [s for s in complete.split(",") if s], bool(is_green), json.loads(counts))


@dataclass
class Against:
    """A run judged against the cluster's history: what changed since its last green run, the figures under their
    baseline, and each figure's trend (values oldest first, this run last; its baseline or None)."""

    last_green: int | None = None  # the run the versions were compared with
    last_green_at: float | None = None
    changes: list = field(default_factory=list)  # trends.Change
    drops: list = field(default_factory=list)  # trends.Drop
    trends: list[tuple[str, str, str, list[float], float | None]] = field(default_factory=list)


def against(history: History, cluster: str, versions: dict[str, dict[str, str]], measured: list[tuple],
            tolerance: float) -> Against:
    """This run (not yet recorded) against the cluster's earlier runs."""
    import statistics

    from . import trends

    got = Against()
    if versions:
        last = history.last_green_versions(cluster)
        if last is not None:
            got.last_green, before = last
            got.last_green_at = history.show(got.last_green).started
            got.changes = trends.version_changes(before, versions)
    newest = history.runs(cluster, limit=1)
    now = history.versions_as_of(cluster, newest[0].id) if newest else {}
    for node, theirs in versions.items():
        now.setdefault(node, {}).update(theirs)
    for what, where, value, unit in measured:
        if trends.direction(unit) is None or not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        passing = history.figure_runs(cluster, what, where, green_only=True, limit=trends.BASELINE_RUNS)
        if passing:
            between = tuple(trends.version_changes(history.versions_as_of(cluster, passing[-1][0]), now))
            drop = trends.baseline_drop(what, where, unit, value, [v for _, v in passing], tolerance, between)
            if drop is not None:
                got.drops.append(drop)
        shown = [v for _, v in history.figure_runs(cluster, what, where, green_only=False, limit=trends.TREND_RUNS - 1)]
        got.trends.append((what, where, unit, shown + [float(value)],
                           statistics.median([v for _, v in passing]) if passing else None))
    return got
