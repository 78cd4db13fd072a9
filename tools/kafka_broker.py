#!/usr/bin/env python3
"""Start a real single-node Apache Kafka broker (KRaft, combined broker+controller) for tests/CI.

There is no Docker on the build machines, so instead of the ``apache/kafka`` image we run the
broker straight from the jars on Maven Central: ``tools/kafka/pom.xml`` pins the versions and
``mvn dependency:copy-dependencies`` drops every runtime jar into a per-version cache dir.

CLI (all progress goes to stderr, so ``BOOTSTRAP=$(python tools/kafka_broker.py start)`` works)::

    python tools/kafka_broker.py fetch            # jars -> cache (no-op when already cached)
    python tools/kafka_broker.py start [--dir D]  # fresh broker; prints 127.0.0.1:PORT last
    python tools/kafka_broker.py restart          # stop + start on the same ports and data
    python tools/kafka_broker.py status           # exit 0 if running, 1 if not
    python tools/kafka_broker.py stop             # idempotent

Python API (for pytest fixtures)::

    libs = fetch_jars()
    broker = start_broker(tmp_path / "kafka")   # -> Broker(.bootstrap, .pid, .stop(), .restart())
    stop_broker(tmp_path / "kafka")

Environment:
    PITLOG_KAFKA_CACHE  cache root; jars go to ``$PITLOG_KAFKA_CACHE/<version>/libs``
                        (default ``~/.cache/pitlog/kafka``)
    PITLOG_KAFKA_DIR    state dir (default ``<repo>/.kafka``); ``--dir`` wins over it
    PITLOG_MVN_ARGS     extra arguments for mvn, e.g. ``-s ci-settings.xml`` or
                        ``-Dmaven.repo.local=/cache/m2``
    JAVA_HOME           if set, ``$JAVA_HOME/bin/java`` is used instead of ``java`` on PATH

State dir layout (only these names are ever created or deleted there)::

    server.properties  broker.json  bootstrap  broker.pid  broker.log  data/

The module is stdlib-only; kafka-python is imported lazily, only for the readiness probe.
"""

from __future__ import annotations

import argparse
import atexit
import base64
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

REPO_ROOT: Path = Path(__file__).resolve().parent.parent
POM_PATH: Path = Path(__file__).resolve().parent / "kafka" / "pom.xml"
DEFAULT_CACHE_ROOT: Path = Path.home() / ".cache" / "pitlog" / "kafka"
DEFAULT_STATE_DIR: Path = REPO_ROOT / ".kafka"
HOST: str = "127.0.0.1"
NODE_ID: int = 1
DEFAULT_START_TIMEOUT_S: float = 120.0
DEFAULT_STOP_TIMEOUT_S: float = 30.0
# The build machines have 2 cores and little memory to spare next to the test suite.
DEFAULT_HEAP: str = "512m"
MIN_JAVA_MAJOR: int = 17  # Kafka 4.x brokers require Java 17+.

# Names inside the state dir. A fresh start deletes exactly these (never the whole dir, which
# could be anything the user passed with --dir).
CONFIG_NAME = "server.properties"
META_NAME = "broker.json"
BOOTSTRAP_NAME = "bootstrap"
PID_NAME = "broker.pid"
LOG_NAME = "broker.log"
DATA_NAME = "data"

_POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}

# Brokers launched by *this* process: keeping the Popen lets us reap the child (otherwise a
# SIGTERMed JVM lingers as a zombie, still "alive" to kill(pid, 0)) and avoids Popen's
# "subprocess is still running" ResourceWarning when the object would be garbage collected.
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}
# State dirs whose broker is stopped when this interpreter exits (see start_broker).
_STOP_AT_EXIT: set[Path] = set()


class KafkaBrokerError(RuntimeError):
    """Anything that prevents fetching, starting or stopping the broker; message is user-facing."""


# --------------------------------------------------------------------------------------------
# Versions and tools
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PomInfo:
    """The few facts read from tools/kafka/pom.xml, which is the single source of versions."""

    kafka_version: str
    dependency_plugin: str  # "groupId:artifactId:version"
    digest: str  # sha256 of the pom; the cache is refetched whenever the pom changes


def read_pom(pom: Path = POM_PATH) -> PomInfo:
    raw = pom.read_bytes()
    root = ET.fromstring(raw)
    version = root.findtext("m:properties/m:kafka.version", namespaces=_POM_NS)
    if not version:
        raise KafkaBrokerError(f"{pom}: <properties><kafka.version> is missing")
    plugin_version: str | None = None
    for plugin in root.iterfind("m:build/m:plugins/m:plugin", _POM_NS):
        if plugin.findtext("m:artifactId", namespaces=_POM_NS) == "maven-dependency-plugin":
            plugin_version = plugin.findtext("m:version", namespaces=_POM_NS)
    if not plugin_version:
        raise KafkaBrokerError(f"{pom}: maven-dependency-plugin must be pinned in <build>")
    return PomInfo(
        kafka_version=version.strip(),
        dependency_plugin=f"org.apache.maven.plugins:maven-dependency-plugin:{plugin_version}",
        digest=hashlib.sha256(raw).hexdigest(),
    )


def find_java() -> str:
    """Path of the java binary, preferring $JAVA_HOME like Kafka's own scripts do."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("java")
    if not found:
        raise KafkaBrokerError(
            "java not found: install a Java 17+ runtime"
            " (e.g. `apt-get install openjdk-17-jre-headless`) or set JAVA_HOME"
        )
    return found


def check_java(java: str) -> None:
    """Fail early and clearly on an old JVM instead of with an UnsupportedClassVersionError."""
    proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    match = re.search(r'version "(\d+)(?:\.(\d+))?', proc.stderr + proc.stdout)
    if not match:
        return  # unknown vendor format: let the JVM speak for itself later
    major = int(match.group(1))
    if major == 1 and match.group(2):  # "1.8.0_x" style
        major = int(match.group(2))
    if major < MIN_JAVA_MAJOR:
        raise KafkaBrokerError(f"{java} is Java {major}; Kafka 4.x needs Java {MIN_JAVA_MAJOR}+")


def find_mvn() -> str:
    found = shutil.which("mvn")
    if not found:
        raise KafkaBrokerError(
            "mvn not found: install Maven 3.8+ (e.g. `apt-get install maven`); it is only needed"
            " once to download the Kafka jars into the cache"
        )
    return found


# --------------------------------------------------------------------------------------------
# fetch
# --------------------------------------------------------------------------------------------


def cache_root() -> Path:
    env = os.environ.get("PITLOG_KAFKA_CACHE")
    return Path(env).expanduser() if env else DEFAULT_CACHE_ROOT


def _required_jars(info: PomInfo) -> list[str]:
    # Sanity check that mvn produced a usable classpath, not just "some" jars.
    return [f"kafka_2.13-{info.kafka_version}.jar", f"kafka-clients-{info.kafka_version}.jar"]


def _cache_complete(libs: Path, stamp: Path, info: PomInfo) -> bool:
    try:
        if stamp.read_text().strip() != info.digest:
            return False
    except OSError:
        return False
    return all((libs / name).is_file() for name in _required_jars(info))


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    """Exclusive flock, so parallel CI jobs/pytest workers don't download into the same dir."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _run_mvn(
    mvn: str, info: PomInfo, out_dir: Path, offline: bool
) -> subprocess.CompletedProcess[str]:
    cmd = [
        mvn,
        "-q",  # only errors
        "-B",  # batch mode: no progress bars / prompts in CI logs
        "-Dstyle.color=never",
        *(["-o"] if offline else []),
        *shlex.split(os.environ.get("PITLOG_MVN_ARGS", "")),
        "-f",
        str(POM_PATH),
        # Fully qualified goal: no plugin-prefix lookup, which would need repository metadata
        # and so break `-o` even when every artifact is already in ~/.m2.
        f"{info.dependency_plugin}:copy-dependencies",
        f"-DoutputDirectory={out_dir}",
        "-DincludeScope=runtime",  # runtime = compile + runtime; no test/provided jars
    ]
    return subprocess.run(
        cmd,
        cwd=POM_PATH.parent,
        capture_output=True,
        text=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
    )


def fetch_jars(root: Path | None = None, *, force: bool = False) -> Path:
    """Ensure the broker jars are cached and return the libs dir (``<root>/<version>/libs``).

    A complete cache (stamp matches the pom's sha256) returns immediately without running mvn.
    Otherwise mvn is tried offline first, so a populated ~/.m2 is enough without network, and
    only then online. The download lands in a temp dir that is renamed into place, so an
    interrupted fetch never leaves a half-filled cache behind.
    """
    info = read_pom()
    version_dir = (root or cache_root()) / info.kafka_version
    libs = version_dir / "libs"
    stamp = version_dir / "libs.sha256"
    if not force and _cache_complete(libs, stamp, info):
        return libs

    mvn = find_mvn()
    find_java()  # mvn itself needs a JVM; report that clearly instead of mvn's message
    with _locked(version_dir / ".lock"):
        if not force and _cache_complete(libs, stamp, info):
            return libs  # another process filled it while we waited for the lock
        tmp = version_dir / f"libs.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        _log(f"fetching Kafka {info.kafka_version} jars with mvn into {libs} ...")
        started = time.monotonic()
        result = _run_mvn(mvn, info, tmp, offline=True)
        if result.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            result = _run_mvn(mvn, info, tmp, offline=False)
        if result.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            output = _strip_ansi(result.stdout + result.stderr).strip()
            raise KafkaBrokerError(
                f"mvn failed to download the Kafka jars (exit {result.returncode}):\n"
                f"{_tail_text(output, 40)}"
            )
        missing = [name for name in _required_jars(info) if not (tmp / name).is_file()]
        if missing:
            shutil.rmtree(tmp, ignore_errors=True)
            raise KafkaBrokerError(f"mvn succeeded but {', '.join(missing)} not in the output")
        old = version_dir / f"libs.old-{os.getpid()}"
        if libs.exists():
            libs.rename(old)
        tmp.rename(libs)
        shutil.rmtree(old, ignore_errors=True)
        stamp.write_text(info.digest + "\n")  # written last: it is what marks the cache complete
        count = sum(1 for _ in libs.glob("*.jar"))
        _log(f"fetched {count} jars in {time.monotonic() - started:.1f}s")
    return libs


# --------------------------------------------------------------------------------------------
# Broker state
# --------------------------------------------------------------------------------------------


def default_state_dir() -> Path:
    env = os.environ.get("PITLOG_KAFKA_DIR")
    return Path(env).expanduser() if env else DEFAULT_STATE_DIR


def _free_ports(count: int) -> list[int]:
    """Ask the kernel for `count` distinct free ports on HOST.

    All sockets stay open until every port is chosen so the kernel cannot hand out the same
    port twice. There is a small race until the JVM binds them; start_broker retries on a
    bind failure.
    """
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((HOST, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _new_cluster_id() -> str:
    """22-char base64url UUID, the format `kafka-storage.sh random-uuid` prints.

    Done in Python to save a JVM start. Like Kafka's Uuid.randomUuid we reject ids starting
    with '-', which the StorageTool's argument parser would take for an option.
    """
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if not cid.startswith("-"):
            return cid


def _server_properties(state_dir: Path, broker_port: int, controller_port: int) -> str:
    data_dir = (state_dir / DATA_NAME).resolve()
    settings: list[tuple[str, str, str]] = [
        # -- KRaft, one JVM doing both jobs -------------------------------------------------
        ("process.roles", "broker,controller", "combined mode: no separate controller JVM"),
        ("node.id", str(NODE_ID), ""),
        (
            "controller.quorum.voters",
            f"{NODE_ID}@{HOST}:{controller_port}",
            "static quorum: ports never change for a state dir, so the dynamic-quorum machinery"
            " (controller.quorum.bootstrap.servers + format --standalone) buys nothing here",
        ),
        ("controller.listener.names", "CONTROLLER", ""),
        (
            "listeners",
            f"PLAINTEXT://{HOST}:{broker_port},CONTROLLER://{HOST}:{controller_port}",
            "",
        ),
        ("advertised.listeners", f"PLAINTEXT://{HOST}:{broker_port}", "what clients get back"),
        ("inter.broker.listener.name", "PLAINTEXT", ""),
        ("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT", ""),
        ("log.dirs", str(data_dir), "metadata log lives here too (metadata.log.dir unset)"),
        # -- single node: nothing can be replicated ----------------------------------------
        ("offsets.topic.replication.factor", "1", ""),
        ("transaction.state.log.replication.factor", "1", ""),
        ("transaction.state.log.min.isr", "1", ""),
        ("share.coordinator.state.topic.replication.factor", "1", "share groups (4.x)"),
        ("share.coordinator.state.topic.min.isr", "1", ""),
        ("default.replication.factor", "1", ""),
        ("min.insync.replicas", "1", ""),
        # -- test-friendly behaviour -----------------------------------------------------------
        ("num.partitions", "1", ""),
        ("auto.create.topics.enable", "false", "a typo'd topic name must fail, not appear"),
        ("group.initial.rebalance.delay.ms", "0", "consumer groups form instantly"),
        (
            "offsets.topic.num.partitions",
            "1",
            "default 50: creating them on the first group join costs seconds on 2 cores",
        ),
        ("transaction.state.log.num.partitions", "1", "same reason"),
        # -- small machine -------------------------------------------------------------------
        ("num.network.threads", "2", "default 3"),
        ("num.io.threads", "4", "default 8"),
        (
            "log.cleaner.dedupe.buffer.size",
            str(16 * 1024 * 1024),
            "default 128 MiB of a 512 MiB heap, only needed for compacting big topics",
        ),
    ]
    lines = [
        "# Generated by tools/kafka_broker.py - single-node KRaft broker for tests/CI.",
        "# Regenerated on every fresh `start`; `restart` reuses it (same ports, same data).",
    ]
    for key, value, why in settings:
        if why:
            lines.append(f"# {why}")
        lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"


def _read_meta(state_dir: Path) -> dict[str, Any]:
    try:
        meta: dict[str, Any] = json.loads((state_dir / META_NAME).read_text())
    except (OSError, ValueError) as exc:
        raise KafkaBrokerError(
            f"{state_dir} holds no formatted broker ({META_NAME} unreadable: {exc}); run start"
        ) from exc
    return meta


def read_pid(state_dir: Path) -> int | None:
    try:
        return int((state_dir / PID_NAME).read_text().strip())
    except (OSError, ValueError):
        return None


def read_bootstrap(state_dir: Path) -> str | None:
    try:
        return (state_dir / BOOTSTRAP_NAME).read_text().strip() or None
    except OSError:
        return None


def _pid_alive(pid: int) -> bool:
    child = _CHILDREN.get(pid)
    if child is not None:
        return child.poll() is None  # poll() also reaps it
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, 0)
            return True
        return False
    # Field 3 (after the parenthesised comm, which may itself contain spaces) is the state;
    # a zombie has exited already and only waits for its parent to reap it.
    return stat.rpartition(")")[2].split()[0] != "Z"


def _is_our_broker(pid: int, state_dir: Path) -> bool:
    """Guards stop against a stale pid file whose pid now belongs to some other process."""
    if not _pid_alive(pid):
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return True  # no /proc (not Linux): trust the pid file
    config = str((state_dir / CONFIG_NAME).resolve()).encode()
    return b"kafka.Kafka" in cmdline and config in cmdline


def running_pid(state_dir: Path) -> int | None:
    """Pid of the broker serving `state_dir`, or None if none is running."""
    pid = read_pid(state_dir)
    if pid is not None and _is_our_broker(pid, state_dir):
        return pid
    return None


# --------------------------------------------------------------------------------------------
# Launch / readiness / stop
# --------------------------------------------------------------------------------------------


def _jvm_cmd(java: str, libs: Path, heap: str) -> list[str]:
    return [
        java,
        f"-Xmx{heap}",
        "-XX:+UseSerialGC",  # least GC threads and footprint; fine for a test broker
        "-XX:+ExitOnOutOfMemoryError",  # die loudly rather than limp along
        "-Djava.awt.headless=true",
        # Kafka 4.x logs through SLF4J; slf4j-simple writes to stderr (-> broker.log).
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-Dorg.slf4j.simpleLogger.showDateTime=true",
        "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS",
        "-cp",
        f"{libs}/*",  # literal '*': the JVM expands the classpath wildcard, not a shell
    ]


def _format_storage(java: str, libs: Path, state_dir: Path, log: IO[bytes]) -> str:
    cluster_id = _new_cluster_id()
    cmd = [
        *_jvm_cmd(java, libs, "256m"),
        "kafka.tools.StorageTool",
        "format",
        "-t",
        cluster_id,
        "-c",
        str((state_dir / CONFIG_NAME).resolve()),
    ]
    result = subprocess.run(
        cmd, cwd=state_dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120
    )
    log.write(result.stdout)
    log.flush()
    if result.returncode != 0:
        raise KafkaBrokerError(
            f"kafka StorageTool format failed (exit {result.returncode}):\n"
            f"{result.stdout.decode(errors='replace')[-4000:]}"
        )
    return cluster_id


def _launch(java: str, libs: Path, state_dir: Path, heap: str, fresh_log: bool) -> int:
    config = (state_dir / CONFIG_NAME).resolve()
    cmd = [*_jvm_cmd(java, libs, heap), "kafka.Kafka", str(config)]
    with open(state_dir / LOG_NAME, "wb" if fresh_log else "ab") as log:
        log.write(f"=== {time.strftime('%Y-%m-%dT%H:%M:%S')} pitlog: {shlex.join(cmd)}\n".encode())
        log.flush()
        proc = subprocess.Popen(
            cmd,
            cwd=state_dir,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            # Own session: the broker survives the CLI exiting and is not hit by a Ctrl-C
            # aimed at the terminal/pytest; stop() is the way to end it.
            start_new_session=True,
            close_fds=True,
        )
    _CHILDREN[proc.pid] = proc
    _write_atomic(state_dir / PID_NAME, f"{proc.pid}\n")
    return proc.pid


def _probe_kafka(bootstrap: str, timeout_s: float) -> str | None:
    """One readiness probe via the admin API; returns None when ready, else why not."""
    try:
        from kafka.admin import KafkaAdminClient
    except ImportError:  # kafka-python absent: the accepting TCP port is all we can check
        return None
    ms = max(1000, int(timeout_s * 1000))
    admin: Any = None
    try:
        admin = KafkaAdminClient(
            bootstrap_servers=bootstrap,
            client_id="pitlog-kafka-readiness",
            request_timeout_ms=ms,
            bootstrap_timeout_ms=ms,
        )
        cluster = admin.describe_cluster()
        admin.list_topics()
    except Exception as exc:  # any client error just means "not yet"
        return f"{type(exc).__name__}: {exc}"
    finally:
        if admin is not None:
            with contextlib.suppress(Exception):
                admin.close()
    brokers = cluster.get("brokers") or []
    # A (re)started broker answers metadata while still fenced; producers need it unfenced.
    if not any(b.get("broker_id") == NODE_ID and not b.get("is_fenced") for b in brokers):
        return f"broker {NODE_ID} not registered/unfenced yet: {brokers}"
    return None


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        return s.connect_ex((HOST, port)) == 0


def _wait_ready(state_dir: Path, pid: int, bootstrap: str, timeout_s: float) -> None:
    port = int(bootstrap.rpartition(":")[2])
    deadline = time.monotonic() + timeout_s
    last = "port not accepting connections yet"
    while time.monotonic() < deadline:
        if not _pid_alive(pid):
            raise BrokerExited(
                f"Kafka broker (pid {pid}) exited during startup.\n"
                f"--- tail of {state_dir / LOG_NAME} ---\n{tail_log(state_dir)}"
            )
        if _port_open(port):
            last = _probe_kafka(bootstrap, min(5.0, max(1.0, deadline - time.monotonic()))) or ""
            if not last:
                return
        time.sleep(0.25)
    raise KafkaBrokerError(
        f"Kafka broker (pid {pid}) not ready on {bootstrap} after {timeout_s:.0f}s"
        f" (last: {last}).\n--- tail of {state_dir / LOG_NAME} ---\n{tail_log(state_dir)}"
    )


class BrokerExited(KafkaBrokerError):
    """The JVM died before becoming ready (bad config, port taken, ...)."""


def tail_log(state_dir: Path, lines: int = 40) -> str:
    try:
        text = (state_dir / LOG_NAME).read_text(errors="replace")
    except OSError:
        return "(no log)"
    return _tail_text(text, lines)


def _kill_and_wait(pid: int, timeout_s: float) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)  # Kafka's shutdown hook flushes logs and checkpoints
    if _wait_exit(pid, timeout_s):
        return
    _log(f"broker pid {pid} ignored SIGTERM for {timeout_s:.0f}s; sending SIGKILL")
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    if not _wait_exit(pid, 10.0):
        raise KafkaBrokerError(f"broker pid {pid} survived SIGKILL")


def _wait_exit(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while _pid_alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    _CHILDREN.pop(pid, None)
    return True


def stop_broker(state_dir: Path | None = None, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> bool:
    """SIGTERM the broker of `state_dir` (SIGKILL after `timeout_s`); True if one was running.

    Idempotent: no pid file, a dead pid or a pid that is no longer a Kafka broker for this
    state dir just clears the pid file.
    """
    state_dir = Path(state_dir or default_state_dir())
    pid = running_pid(state_dir)
    if pid is not None:
        _kill_and_wait(pid, timeout_s)
    with contextlib.suppress(FileNotFoundError):
        (state_dir / PID_NAME).unlink()
    return pid is not None


@dataclass
class Broker:
    """Handle on a broker whose state lives in `state_dir`; safe to use as a context manager."""

    state_dir: Path
    bootstrap: str
    controller_port: int
    heap: str = DEFAULT_HEAP

    @property
    def pid(self) -> int | None:
        """Current pid (changes on restart), None when not running."""
        return running_pid(self.state_dir)

    @property
    def port(self) -> int:
        return int(self.bootstrap.rpartition(":")[2])

    @property
    def log_path(self) -> Path:
        return self.state_dir / LOG_NAME

    def is_running(self) -> bool:
        return self.pid is not None

    def stop(self, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> None:
        stop_broker(self.state_dir, timeout_s)

    def restart(self, timeout_s: float = DEFAULT_START_TIMEOUT_S) -> None:
        restart(self.state_dir, timeout_s=timeout_s, heap=self.heap)

    def start(self, timeout_s: float = DEFAULT_START_TIMEOUT_S) -> None:
        """Start again after stop(), on the same ports and data."""
        resume_broker(self.state_dir, timeout_s=timeout_s, heap=self.heap)

    def __enter__(self) -> Broker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _broker_from_meta(state_dir: Path, heap: str) -> Broker:
    meta = _read_meta(state_dir)
    return Broker(
        state_dir=state_dir,
        bootstrap=str(meta["bootstrap"]),
        controller_port=int(meta["controller_port"]),
        heap=heap,
    )


def _register_stop_at_exit(state_dir: Path) -> None:
    if state_dir not in _STOP_AT_EXIT:
        _STOP_AT_EXIT.add(state_dir)
        atexit.register(_stop_quietly, state_dir)


def _stop_quietly(state_dir: Path) -> None:
    with contextlib.suppress(Exception):
        stop_broker(state_dir)


def _wipe_state(state_dir: Path) -> None:
    for name in (CONFIG_NAME, META_NAME, BOOTSTRAP_NAME, PID_NAME):
        with contextlib.suppress(FileNotFoundError):
            (state_dir / name).unlink()
    shutil.rmtree(state_dir / DATA_NAME, ignore_errors=True)


def start_broker(
    state_dir: Path | None = None,
    *,
    timeout_s: float = DEFAULT_START_TIMEOUT_S,
    heap: str = DEFAULT_HEAP,
    libs: Path | None = None,
    stop_at_exit: bool = True,
) -> Broker:
    """Format a fresh single-node KRaft broker in `state_dir` on free ports and wait until ready.

    If a broker is already running from `state_dir` it is reused as is (after a readiness
    check) rather than wiped. Otherwise previous data in `state_dir` is discarded.
    `stop_at_exit` stops a broker *this call launched* when the interpreter exits, so a
    crashed or interrupted pytest run does not leave a JVM behind; the CLI passes False.
    """
    state_dir = Path(state_dir or default_state_dir()).absolute()
    pid = running_pid(state_dir)
    if pid is not None:
        broker = _broker_from_meta(state_dir, heap)
        _wait_ready(state_dir, pid, broker.bootstrap, timeout_s)
        return broker

    libs = libs or fetch_jars()
    java = find_java()
    check_java(java)
    state_dir.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout_s
    attempts = 3  # only to ride out a port grabbed by someone else between pick and bind
    for attempt in range(1, attempts + 1):
        _wipe_state(state_dir)
        broker_port, controller_port = _free_ports(2)
        bootstrap = f"{HOST}:{broker_port}"
        _write_atomic(
            state_dir / CONFIG_NAME, _server_properties(state_dir, broker_port, controller_port)
        )
        with open(state_dir / LOG_NAME, "wb") as log:
            cluster_id = _format_storage(java, libs, state_dir, log)
        meta = {
            "bootstrap": bootstrap,
            "controller_port": controller_port,
            "cluster_id": cluster_id,
            "kafka_version": read_pom().kafka_version,
            "libs": str(libs.resolve()),
            "java": java,
        }
        _write_atomic(state_dir / META_NAME, json.dumps(meta, indent=2) + "\n")
        _write_atomic(state_dir / BOOTSTRAP_NAME, bootstrap + "\n")
        pid = _launch(java, libs, state_dir, heap, fresh_log=False)
        if stop_at_exit:
            _register_stop_at_exit(state_dir)
        try:
            _wait_ready(state_dir, pid, bootstrap, max(1.0, deadline - time.monotonic()))
        except BrokerExited:
            stop_broker(state_dir)
            if attempt < attempts and "Address already in use" in tail_log(state_dir, 200):
                _log(f"port clash on {bootstrap}/{controller_port}; retrying with new ports")
                continue
            raise
        except BaseException:
            stop_broker(state_dir)  # don't leave a half-started JVM behind (incl. Ctrl-C)
            raise
        return Broker(state_dir, bootstrap, controller_port, heap)
    raise AssertionError("unreachable")


def resume_broker(
    state_dir: Path | None = None,
    *,
    timeout_s: float = DEFAULT_START_TIMEOUT_S,
    heap: str = DEFAULT_HEAP,
) -> Broker:
    """Start the already-formatted broker in `state_dir` again: same ports, same data."""
    state_dir = Path(state_dir or default_state_dir()).absolute()
    broker = _broker_from_meta(state_dir, heap)
    pid = running_pid(state_dir)
    if pid is None:
        meta = _read_meta(state_dir)
        libs = Path(meta["libs"])
        if not libs.is_dir():  # cache wiped since the first start
            libs = fetch_jars()
        pid = _launch(find_java(), libs, state_dir, heap, fresh_log=False)
    try:
        _wait_ready(state_dir, pid, broker.bootstrap, timeout_s)
    except BaseException:
        stop_broker(state_dir)
        raise
    return broker


def restart(
    state_dir: Path | None = None,
    *,
    timeout_s: float = DEFAULT_START_TIMEOUT_S,
    heap: str = DEFAULT_HEAP,
) -> Broker:
    """Stop the broker (if running) and start it again on the same ports and data, no reformat.

    Ports are re-bound right after the old JVM exits; the JVM sets SO_REUSEADDR on its server
    sockets, so connections left in TIME_WAIT by clients do not block the re-bind.
    """
    state_dir = Path(state_dir or default_state_dir()).absolute()
    _read_meta(state_dir)  # fail before stopping anything if there is nothing to restart
    stop_broker(state_dir)
    return resume_broker(state_dir, timeout_s=timeout_s, heap=heap)


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def _write_atomic(path: Path, text: str) -> None:
    # Readers (status, other processes) never see a half-written pid/bootstrap file.
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text)
    tmp.replace(path)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def _tail_text(text: str, lines: int) -> str:
    return "\n".join(text.splitlines()[-lines:])


def _log(msg: str) -> None:
    print(f"kafka_broker: {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="kafka_broker.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="state dir (default: $PITLOG_KAFKA_DIR or <repo>/.kafka)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    fetch_p = sub.add_parser("fetch", help="download the jars into the cache (no-op if cached)")
    fetch_p.add_argument("--force", action="store_true", help="re-download even if cached")
    for name, help_text in (
        ("start", "format a fresh broker on free ports and wait until ready"),
        ("restart", "stop and start again on the same ports and data"),
    ):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--timeout", type=float, default=DEFAULT_START_TIMEOUT_S)
        p.add_argument("--heap", default=DEFAULT_HEAP, help="JVM -Xmx (default %(default)s)")
    stop_p = sub.add_parser("stop", help="stop the broker (idempotent)")
    stop_p.add_argument("--timeout", type=float, default=DEFAULT_STOP_TIMEOUT_S)
    sub.add_parser("status", help="exit 0 and print the bootstrap if running, else exit 1")
    args = parser.parse_args(argv)
    state_dir: Path = (args.dir or default_state_dir()).absolute()

    try:
        if args.command == "fetch":
            print(fetch_jars(force=args.force))
        elif args.command == "start":
            started = time.monotonic()
            broker = start_broker(
                state_dir, timeout_s=args.timeout, heap=args.heap, stop_at_exit=False
            )
            elapsed = time.monotonic() - started
            _log(f"broker pid {broker.pid} ready in {elapsed:.1f}s; log: {broker.log_path}")
            print(broker.bootstrap)
        elif args.command == "restart":
            started = time.monotonic()
            broker = restart(state_dir, timeout_s=args.timeout, heap=args.heap)
            _log(f"broker pid {broker.pid} ready in {time.monotonic() - started:.1f}s")
            print(broker.bootstrap)
        elif args.command == "stop":
            was_running = stop_broker(state_dir, args.timeout)
            _log("stopped" if was_running else "not running")
        elif args.command == "status":
            pid = running_pid(state_dir)
            bootstrap = read_bootstrap(state_dir) or "-"
            if pid is None:
                print(f"not running (state dir {state_dir}, last bootstrap {bootstrap})")
                return 1
            print(f"running pid={pid} bootstrap={bootstrap}")
    except KafkaBrokerError as exc:
        print(f"kafka_broker: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
