#!/usr/bin/env python3
"""make chaos: the contract's promises under faults, with figures anyone can rerun.

Starts its own PostgreSQL cluster (TCP on 127.0.0.1 with password authentication, so that the
job runs as a least-privileged role with a password, as in production) and the App Store
simulator, both from the release build, and runs these scenarios:

  crash-loop    SIGKILL at random points of every stage, restart until one run completes;
                compare with an uninterrupted run
  database-gone Postgres stopped during verify and during decide; wrong port, password, role,
                database
  app-store-lies garbage and mutated answers; the answer parser under libFuzzer
  secrets       the shared secret and the database password searched for everywhere
  privileges    a least-privileged role runs the night; missing privileges end in exit 78
  load          a slow tail (p99 2 s) and 5% connection resets on the bench-verify data set
  host-unresolvable, host-refuses, host-tls-fails, host-silent, host-resets
                an App Store that cannot be reached (for verifyReceipt, the Server API sweeps and
                lookup): exit 75 within --timeout-ms + 15 s and 5 CPU-seconds, nothing believed

Each scenario prints one line, PASS or FAIL and its figures; the script exits 1 when any fails.
`--quick` is the CI form (smaller data, fewer kills, fewer fuzz inputs). `--seed` makes the
random choices (kill points) reproducible. See docs/reliability.md.
"""
import argparse
import json
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AS_OF = "2026-11-21T03:00:00Z"
DAY = "2026-11-21"
BUNDLE = "com.example.game"
SECRET = "chaos-shared-secret-5Qx9vT"
DB_PASSWORD = "chaos-db-password-Zr8kLm"
JOB_ROLE = "chaos_job"
REPORTS = ["compensate.csv", "duplicate_grants.csv", "clawback.csv", "refunds.csv", "unattributed.csv", "closed.csv",
           "unresolved.csv", "input_errors.csv"]
# The workbook and the page carry the run's id and zip times: present in every set, compared by the CSVs they hold.
EVERY_FILE = set(REPORTS + ["summary.json", "reconciliation.xlsx", "summary.html"])


def fail(message):
    raise AssertionError(message)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def as_owner(cmd):
    """initdb and postgres refuse to run as root: drop to the postgres user then."""
    return ["runuser", "-u", "postgres", "--"] + cmd if os.geteuid() == 0 else cmd


class Cluster:
    """A throwaway PostgreSQL cluster: admin by unix socket (trust), everyone else by TCP with a password."""

    def __init__(self):
        bindir = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True).stdout.strip()
        if not os.path.exists(os.path.join(bindir, "initdb")):
            bindir = sorted(d for d in (f"/usr/lib/postgresql/{v}/bin" for v in os.listdir("/usr/lib/postgresql"))
                            if os.path.exists(os.path.join(d, "initdb")))[-1]
        self.bindir = bindir
        self.dir = tempfile.mkdtemp(prefix="iap-chaos-pg.")
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres")
        self.data = os.path.join(self.dir, "data")
        self.port = free_port()
        subprocess.run(as_owner([f"{bindir}/initdb", "-D", self.data, "-U", "postgres", "-E", "UTF8", "--locale=C",
                                 "--auth-local=trust", "--auth-host=scram-sha-256"]),
                       check=True, capture_output=True)
        self.start()
        self.psql(f"CREATE ROLE {JOB_ROLE} LOGIN PASSWORD '{DB_PASSWORD}'")

    def start(self):
        opts = (f"-k {self.dir} -c listen_addresses=127.0.0.1 -p {self.port} -c fsync=off -c synchronous_commit=off "
                "-c full_page_writes=off -c max_connections=100 -c shared_buffers=128MB")
        subprocess.run(as_owner([f"{self.bindir}/pg_ctl", "-D", self.data, "-w", "-t", "60", "-l",
                                 os.path.join(self.dir, "server.log"), "-o", opts, "start"]),
                       check=True, capture_output=True)

    def stop(self, mode="fast"):
        subprocess.run(as_owner([f"{self.bindir}/pg_ctl", "-D", self.data, "-m", mode, "-w", "stop"]),
                       capture_output=True)

    def destroy(self):
        self.stop("immediate")
        shutil.rmtree(self.dir, ignore_errors=True)

    def admin_env(self, db="postgres"):
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG") and k != "DATABASE_URL"}
        env.update(PGHOST=self.dir, PGPORT=str(self.port), PGUSER="postgres", PGDATABASE=db)
        return env

    def psql(self, sql, db="postgres"):
        r = subprocess.run(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1", "-c", sql], env=self.admin_env(db),
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"psql: {r.stderr.strip()}")
        return r.stdout.strip()

    def url(self, db, role=JOB_ROLE, password=DB_PASSWORD, port=None):
        return f"postgresql://{role}:{password}@127.0.0.1:{port or self.port}/{db}"

    def new_database(self, name, users, seed=42, drop_21002=False):
        """A database with generated data; the job's role may read the sources and owns the job schema."""
        self.psql(f"CREATE DATABASE {name}")
        work = tempfile.mkdtemp(prefix=f"iap-chaos-{name}.")
        expected = os.path.join(work, "expected")
        refunds = os.path.join(work, "refunds.csv")
        subprocess.run([f"{BIN}/iap-sim", "seed", "--users", str(users), "--seed", str(seed), "--as-of", AS_OF,
                        "--bundle", BUNDLE, "--refunds", refunds, "--expected", expected],
                       env=self.admin_env(name), check=True, capture_output=True)
        if drop_21002:
            # Receipts Apple answers 21002 are rejected on the third *run* that got one: their verdict
            # depends on how many runs there were, by design. The crash loop compares runs, not counts.
            # (and receipts whose data is no token at all: the simulator answers those 21002 too)
            tokens = receipt_rids(self, name)
            ids = [r for r in self.psql("SELECT receipt_id FROM iap_receipts", name).splitlines()
                   if tokens.get(r, {}).get("st", 21002 if r not in tokens else 0) == 21002]
            if ids:
                self.psql("DELETE FROM iap_receipts WHERE receipt_id IN (%s)" % ",".join(f"'{i}'" for i in ids), name)
        self.psql(f"""GRANT CONNECT, TEMPORARY ON DATABASE {name} TO {JOB_ROLE};
                      GRANT SELECT ON iap_products, iap_orders, iap_receipts, iap_grants TO {JOB_ROLE};
                      CREATE SCHEMA recon AUTHORIZATION {JOB_ROLE};""", name)
        return work, expected, refunds


def receipt_rids(cluster, db):
    """receipt_id → the simulator's receipt id inside its token (base64 JSON); other data is skipped."""
    import base64
    out = {}
    for line in cluster.psql("SELECT receipt_id, receipt_data FROM iap_receipts WHERE receipt_data IS NOT NULL", db).splitlines():
        rid, data = line.split("|", 1)
        try:
            token = json.loads(base64.b64decode(data, validate=False))
            out[rid] = token
        except Exception:  # noqa: BLE001 - not a token: never the simulator's
            pass
    return out


class Simulator:
    running = []  # started and not stopped: a scenario that fails stops no simulator; main() does

    def __init__(self, work, *args):
        self.log = os.path.join(work, f"calls-{time.monotonic_ns()}.tsv")
        port_file = os.path.join(work, f"port-{time.monotonic_ns()}")
        self.proc = subprocess.Popen([f"{BIN}/iap-sim", "serve", "--port", "0", "--port-file", port_file,
                                      "--call-log", self.log, "--shared-secret", SECRET, *args],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        Simulator.running.append(self)
        for _ in range(200):
            if os.path.exists(port_file) and open(port_file).read().strip():
                break
            time.sleep(0.05)
        self.port = int(open(port_file).read())

    def env(self):
        return {"IAP_VERIFY_URL_PRODUCTION": f"http://127.0.0.1:{self.port}/production/verifyReceipt",
                "IAP_VERIFY_URL_SANDBOX": f"http://127.0.0.1:{self.port}/sandbox/verifyReceipt"}

    def calls(self):
        out = []
        if os.path.exists(self.log):
            for line in open(self.log):
                f = line.rstrip("\n").split("\t")
                if len(f) >= 4:
                    out.append((int(f[0]), f[1], f[2], f[3]))
        return out

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        if self in Simulator.running:
            Simulator.running.remove(self)


class Job:
    """iap-reconcile as a child process; stdout and stderr go to files; rusage from wait4."""
    outputs = []  # every stderr/stdout file, for the secrets search

    def __init__(self, args, env, work):
        self.err = os.path.join(work, f"job-{time.monotonic_ns()}.err")
        Job.outputs.append(self.err)
        self.started = time.monotonic()
        self.proc = subprocess.Popen([f"{BIN}/iap-reconcile", *args], env=env, stdout=open(self.err + ".out", "w"),
                                     stderr=open(self.err, "w"))
        Job.outputs.append(self.err + ".out")
        self.status = None
        self.maxrss_kb = 0
        self.seconds = 0.0  # wall time from start to exit
        self.cpu = 0.0      # user + system CPU seconds of the job (its threads included)

    def stderr(self):
        return open(self.err, errors="replace").read()

    def wait(self, timeout=600):
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
            if pid:
                self.seconds = time.monotonic() - self.started
                self.maxrss_kb = usage.ru_maxrss
                self.cpu = usage.ru_utime + usage.ru_stime
                self.status = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
                self.proc.returncode = self.status
                return self.status
            if time.monotonic() > deadline:
                self.kill()
                return self.status
            time.sleep(0.01)

    def kill(self):
        os.kill(self.proc.pid, signal.SIGKILL)
        return self.wait()

    def wait_for(self, text, timeout=120):
        """True once `text` is on stderr; False when the job ended first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.stderr():
                return True
            if self.proc.poll() is not None:
                return text in self.stderr()
            time.sleep(0.005)
        return False


def job_env(cluster, db, sim, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG") and k != "DATABASE_URL"}
    env.update(DATABASE_URL=cluster.url(db), IAP_SHARED_SECRET=SECRET, IAP_BUNDLE_IDS=BUNDLE)
    if sim:
        env.update(sim.env())
    env.update(extra)
    return env


def run_args(out, *more):
    return ["run", "--as-of", AS_OF, "--out", out, "--progress", "never", "--log-level", "info", "--timeout-ms", "3000",
            "--retry-base-ms", "20", *more]


def read_reports(folder):
    return {f: open(os.path.join(folder, f), "rb").read() for f in REPORTS}


def comparable_summary(folder):
    s = json.load(open(os.path.join(folder, "summary.json")))
    return {k: s.get(k) for k in ("as_of", "window", "counts", "reasons", "tally", "exit_code")}


def one_line_error(job, code, contains):
    lines = [l for l in job.stderr().splitlines() if l.startswith("iap-reconcile:")]
    if job.status != code or len(lines) != 1 or contains not in lines[0]:
        fail(f"expected exit {code} with one line containing {contains!r}, got {job.status}: {job.stderr()[-400:]!r}")
    return lines[0]


# MARK: - scenarios

def crash_loop(cluster, quick, rng):
    """SIGKILL at random points of every stage until a run completes; the result equals an uninterrupted run."""
    users, kills = (500, 12) if quick else (1500, 32)
    work_ref, _, refunds = cluster.new_database("crash_ref", users, drop_21002=True)
    sim = Simulator(work_ref, "--refunds", refunds, "--latency-ms", "30")
    ref_out = os.path.join(work_ref, "reports")
    ref = Job(run_args(ref_out, "--sweep-limit", "0", "--concurrency", "8"), job_env(cluster, "crash_ref", sim), work_ref)
    if ref.wait() != 0:
        fail(f"uninterrupted run: {ref.stderr()[-400:]}")
    sim.stop()
    seconds = json.load(open(os.path.join(ref_out, DAY, "summary.json")))["seconds"]

    work, _, refunds = cluster.new_database("crash", users, drop_21002=True)
    sim = Simulator(work, "--refunds", refunds, "--latency-ms", "30")
    out = os.path.join(work, "reports")
    env = job_env(cluster, "crash", sim)
    folder = os.path.join(out, DAY)
    half_written = []
    watching = [True]

    def watch():
        # The dated folder, whenever it exists, holds the whole set (checked on the inode listed).
        while watching[0]:
            try:
                fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
            except FileNotFoundError:
                time.sleep(0.002)
                continue
            try:
                names = set(os.listdir(fd))
                st = os.fstat(fd)
                same = st.st_nlink > 0 and os.stat(folder).st_ino == st.st_ino
                if same and not EVERY_FILE <= names:
                    half_written.append(sorted(names))
            except FileNotFoundError:
                pass
            finally:
                os.close(fd)
            time.sleep(0.002)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    budget = {"migrate": 0.03, "verify": max(0.2, seconds.get("verify", 1)), "decide": max(0.2, seconds.get("decide", 1)),
              "write": 0.3}
    stages = ["migrate", "verify", "decide", "write"]
    killed_in = {s: 0 for s in stages + ["tally", "check", "start-up"]}
    stuck, done_early, k = 0, 0, 0
    while k < kills:
        target = stages[k % len(stages)]
        job = Job(run_args(out, "--sweep-limit", "0", "--concurrency", "8"), env, work)
        if not job.wait_for(f"stage {target}"):
            status = job.wait()
            if status == 75:
                stuck += 1
            elif status == 0:
                done_early += 1  # finished before reaching the stage: nothing left to kill there
            else:
                fail(f"a run exited {status}: {job.stderr()[-400:]}")
            if done_early > kills:
                break
            continue
        time.sleep(rng.uniform(0, budget[target]))
        text = job.stderr()
        running = [s for s in killed_in if f"stage {s}" in text]
        at = max(running, key=lambda s: text.rfind(f"stage {s}")) if running else "start-up"
        job.kill()
        killed_in[at] += 1
        k += 1
    final = Job(run_args(out, "--sweep-limit", "0", "--concurrency", "8"), env, work)
    status = final.wait()
    watching[0] = False
    watcher.join()
    sim.stop()
    if status == 75:
        stuck += 1
    if status not in (0, 75):
        fail(f"the last run exited {status}: {final.stderr()[-400:]}")
    if status == 75:
        final = Job(run_args(out, "--sweep-limit", "0"), env, work)
        if final.wait() != 0:
            fail("no run completed after the kills")
    got, want = read_reports(folder), read_reports(os.path.join(ref_out, DAY))
    identical = got == want
    differing = [f for f in REPORTS if got[f] != want[f]]
    summary_equal = comparable_summary(folder) == comparable_summary(os.path.join(ref_out, DAY))
    resent = resent_after_definitive(cluster, "crash", sim)
    figures = (f"kills={k} ({', '.join(f'{s} {n}' for s, n in killed_in.items() if n)}) reports_identical="
               f"{'yes' if identical else 'no'} summary_equal={'yes' if summary_equal else 'no'} "
               f"resent_after_definitive={resent} half_written_seen={len(half_written)} stuck_lock={stuck}")
    if k < kills or not identical or not summary_equal or resent or half_written or stuck:
        fail(figures + (f" half_written={half_written[:2]}" if half_written else "")
             + (f" differing={differing} first: {sorted(set(got[differing[0]].splitlines()) ^ set(want[differing[0]].splitlines()))[:4]}"
                if differing else ""))
    return figures


def resent_after_definitive(cluster, db, sim):
    """Calls to the simulator for a receipt after its definitive answer was stored (the sweep is off)."""
    tokens = receipt_rids(cluster, db)
    rows = cluster.psql("""
        SELECT r.receipt_id,
               (SELECT (extract(epoch FROM min(a.at)) * 1000)::bigint FROM recon.verify_attempts a
                WHERE a.receipt_id = r.receipt_id AND a.answer_class IN ('ok', 'reject'))
        FROM iap_receipts r WHERE r.receipt_id IN (SELECT receipt_id FROM recon.verify_attempts)""", db)
    final_at = {}
    for line in rows.splitlines():
        receipt, at = line.split("|")
        rid = tokens.get(receipt, {}).get("rid")
        if rid is None:
            continue
        # Two uploads of one token share its rid: a rid is done when every upload sent is.
        final_at[rid] = None if (at == "" or final_at.get(rid, 0) is None) else max(int(at), final_at.get(rid, 0))
    return sum(1 for ms, _, rid, _ in sim.calls() if final_at.get(rid) is not None and ms > final_at[rid])


def database_gone(cluster, quick):
    """Postgres stopped mid-run: exit 75, no report touched; after a restart the next run is whole."""
    work, expected, refunds = cluster.new_database("gone", 400 if quick else 1000)
    # The same relations behind views whose products take 3 s to read: the decide stage is the first
    # to read them (with the sweep off), so it is long enough to lose its database in the middle.
    cluster.psql(f"""CREATE SCHEMA slowdecide AUTHORIZATION postgres;
        CREATE VIEW slowdecide.iap_products AS SELECT p.* FROM public.iap_products p, (SELECT pg_sleep(3)) s;
        CREATE VIEW slowdecide.iap_orders AS SELECT * FROM public.iap_orders;
        CREATE VIEW slowdecide.iap_receipts AS SELECT * FROM public.iap_receipts;
        CREATE VIEW slowdecide.iap_grants AS SELECT * FROM public.iap_grants;
        GRANT USAGE ON SCHEMA slowdecide TO {JOB_ROLE};
        GRANT SELECT ON ALL TABLES IN SCHEMA slowdecide TO {JOB_ROLE};""", "gone")
    sim = Simulator(work, "--refunds", refunds, "--latency-ms", "150")
    out = os.path.join(work, "reports")
    folder = os.path.join(out, DAY)
    env = job_env(cluster, "gone", sim)
    results = []
    def lose_database(args, stage, mode):
        """A run whose database stops (`mode` shutdown) half a second into `stage`: exit 75, one line."""
        job = Job(run_args(out, *args), env, work)
        if not job.wait_for(f"stage {stage}"):
            fail(f"the run never reached {stage}: {job.stderr()[-300:]}")
        time.sleep(0.5)
        cluster.stop(mode)
        job.wait()
        one_line_error(job, 75, "")

    # 1. The first night loses its database while verifying (fast shutdown): no folder appears.
    lose_database(["--concurrency", "4", "--retry-delay-minutes", "0"], "verify", "fast")
    if os.path.exists(folder):
        fail("a report folder was written by a run whose database went away (verify)")
    cluster.start()
    results.append("verify/fast=75")
    # 2. After the restart the next night is whole.
    whole = Job(run_args(out, "--retry-delay-minutes", "0"), env, work)
    if whole.wait() != 0:
        fail(f"the run after the restart: {whole.stderr()[-400:]}")
    for f in ["compensate.csv", "duplicate_grants.csv", "clawback.csv", "refunds.csv", "unattributed.csv", "input_errors.csv"]:
        if open(os.path.join(folder, f), "rb").read() != open(os.path.join(expected, f), "rb").read():
            fail(f"after the restart {f} differs from the generator's truth")
    before = {f: open(os.path.join(folder, f), "rb").read() for f in sorted(os.listdir(folder))}
    # 3. A rerun loses its database while deciding (immediate shutdown): last night's folder stays as it was.
    lose_database(["--sweep-limit", "0", "--source-schema", "slowdecide"], "decide", "immediate")
    after = {f: open(os.path.join(folder, f), "rb").read() for f in sorted(os.listdir(folder))}
    if after != before:
        fail("a run whose database went away changed the report folder (decide)")
    cluster.start()
    results.append("decide/immediate=75 folder_untouched=yes")
    again = Job(run_args(out), env, work)
    if again.wait() != 0:
        fail(f"the run after the second restart: {again.stderr()[-400:]}")
    sim.stop()
    for name, url, code in (("wrong port", cluster.url("gone", port=free_port()), 75),
                            ("bad password", cluster.url("gone", password="not-the-password"), 78),
                            ("unknown role", cluster.url("gone", role="nobody"), 78),
                            ("unknown database", cluster.url("no_such_db"), 78)):
        job = Job(run_args(out), job_env(cluster, "gone", None, DATABASE_URL=url), work)
        job.wait()
        one_line_error(job, code, "")
        results.append(f"{name.replace(' ', '_')}={code}")
    return " ".join(results) + " next_run_whole=yes"


def app_store_lies(cluster, quick):
    """Garbage and broken answers are never believed; the parser survives libFuzzer."""
    work, _, refunds = cluster.new_database("lies", 400 if quick else 1500)
    sim = Simulator(work, "--refunds", refunds, "--garbage", "--fault-rate", "0.3", "--faults", "truncated,nonjson",
                    "--mutate-rate", "0.5", "--seed", "7")
    job = Job(run_args(os.path.join(work, "reports"), "--retry-delay-minutes", "0", "--sweep-interval-hours", "0"),
              job_env(cluster, "lies", sim), work)
    status = job.wait()
    sim.stop()
    if status != 0:
        fail(f"the night under lies exited {status}: {job.stderr()[-400:]}")
    calls = sim.calls()
    hostile = sum(1 for c in calls if c[3].startswith(("garbage:", "mutated:")))
    # Every valid verdict came from a clean answer: the last call for its token before the answer was stored.
    tokens = receipt_rids(cluster, "lies")
    rows = cluster.psql("SELECT receipt_id, (extract(epoch FROM at) * 1000)::bigint FROM recon.verify_attempts "
                        "WHERE answer_class = 'ok'", "lies")
    believed = 0
    for line in rows.splitlines():
        receipt, at = line.split("|")
        rid = tokens.get(receipt, {}).get("rid")
        before = [c for c in calls if c[2] == rid and c[0] <= int(at)]
        if not before or not before[-1][3] in ("0", "21006"):
            believed += 1
    rss = job.maxrss_kb / 1024
    fuzz = run_fuzzer(quick)
    figures = (f"hostile_answers={hostile} valid_from_hostile={believed} peak_rss={rss:.1f}MB crash=no "
               f"fuzz_inputs={fuzz['runs']} fuzz_crashes={fuzz['crashes']}")
    if hostile == 0 or believed or rss >= 100 or fuzz["crashes"] or fuzz["runs"] < fuzz["wanted"]:
        fail(figures)
    return figures


def run_fuzzer(quick):
    wanted = 50_000 if quick else 1_000_000
    fuzzer = os.environ.get("IAP_FUZZ_BIN") or os.path.join(ROOT, ".build-fuzz", "release", "iap-fuzz")
    corpus = os.path.join(ROOT, "Tests", "Fuzz", "corpus")
    scratch = tempfile.mkdtemp(prefix="iap-chaos-fuzz.")
    shutil.copytree(corpus, os.path.join(scratch, "corpus"))
    r = subprocess.run([fuzzer, os.path.join(scratch, "corpus"), f"-runs={wanted}", "-max_len=65536", "-seed=1",
                        f"-artifact_prefix={scratch}/", "-print_final_stats=1"], capture_output=True, text=True)
    runs = 0
    for line in r.stderr.splitlines():
        if line.startswith("stat::number_of_executed_units:"):
            runs = int(line.split(":")[-1])
    crashes = 0 if r.returncode == 0 else 1
    if crashes:
        print(r.stderr[-2000:], file=sys.stderr)
    return {"runs": runs, "crashes": crashes, "wanted": wanted}


def secrets(cluster, quick):
    """The shared secret and the database password appear nowhere, after good runs, failed runs and kills."""
    work, _, refunds = cluster.new_database("secrets", 300)
    out = os.path.join(work, "reports")
    sim = Simulator(work, "--refunds", refunds, "--latency-ms", "20", "--fault-rate", "0.1", "--seed", "3")
    env = job_env(cluster, "secrets", sim)
    Job(run_args(out, "--log-level", "trace"), env, work).wait()
    killed = Job(run_args(out, "--log-level", "trace"), env, work)
    killed.wait_for("stage verify")
    killed.kill()
    Job(run_args(out, "--log-level", "debug"), env, work).wait()
    # Failed runs: the App Store refuses the secret; the database refuses the password; a URL that does not parse.
    Job(run_args(out), job_env(cluster, "secrets", sim, IAP_SHARED_SECRET=SECRET + "-wrong"), work).wait()
    Job(run_args(out), job_env(cluster, "secrets", sim, DATABASE_URL=cluster.url("secrets", password=DB_PASSWORD + "x")),
        work).wait()
    Job(run_args(out), job_env(cluster, "secrets", sim, DATABASE_URL=f"postgresql://u:{DB_PASSWORD}%zz@/x"), work).wait()
    sim.stop()
    dump = os.path.join(work, "recon.sql")
    subprocess.run(["pg_dump", "--schema=recon", "-f", dump], env=cluster.admin_env("secrets"), check=True)
    files = list(Job.outputs) + [dump] + [os.path.join(d, f) for d, _, fs in os.walk(out) for f in fs]
    hits, searched = 0, 0
    for path in files:
        if os.path.exists(path):
            data = open(path, "rb").read()
            searched += len(data)
            for secret in (SECRET, DB_PASSWORD):
                hits += data.count(secret.encode())
    if hits:
        fail(f"files={len(files)} bytes={searched} hits={hits}")
    return f"files={len(files)} bytes={searched} hits=0 (normal, killed, 21004, refused login, malformed URL)"


def privileges(cluster, quick):
    """The least-privileged role runs the night; a role without a privilege gets exit 78 naming it."""
    work, _, refunds = cluster.new_database("privs", 200)
    out = os.path.join(work, "reports")
    sim = Simulator(work, "--refunds", refunds)
    ok = Job(run_args(out), job_env(cluster, "privs", sim), work)
    if ok.wait() != 0:
        fail(f"the least-privileged role could not run the night: {ok.stderr()[-300:]}")
    cluster.psql(f"""CREATE ROLE chaos_noschema LOGIN PASSWORD '{DB_PASSWORD}';
                     GRANT CONNECT, TEMPORARY ON DATABASE privs TO chaos_noschema;
                     GRANT SELECT ON iap_products, iap_orders, iap_receipts, iap_grants TO chaos_noschema;
                     CREATE ROLE chaos_noread LOGIN PASSWORD '{DB_PASSWORD}';
                     GRANT CONNECT, TEMPORARY ON DATABASE privs TO chaos_noread;
                     GRANT SELECT ON iap_products, iap_receipts, iap_grants TO chaos_noread;
                     GRANT USAGE, CREATE ON SCHEMA recon TO chaos_noread;
                     GRANT ALL ON ALL TABLES IN SCHEMA recon TO chaos_noread;
                     GRANT ALL ON ALL SEQUENCES IN SCHEMA recon TO chaos_noread;""", "privs")
    results = ["least_privileged_role=0"]
    for role, contains in (("chaos_noschema", "schema recon"), ("chaos_noread", "SELECT on public.iap_orders")):
        job = Job(run_args(out), job_env(cluster, "privs", sim, DATABASE_URL=cluster.url("privs", role=role)), work)
        job.wait()
        line = one_line_error(job, 78, contains)
        results.append(f"{role}=78")
    sim.stop()
    return " ".join(results)


def load(cluster, quick):
    """A slow tail and resets: at least 99% of the receipts settled in one run, the rest unresolved with a reason."""
    n = 3000 if quick else 20000
    cluster.psql("CREATE DATABASE load")
    subprocess.run([f"{BIN}/iap-sim", "seed", "--users", str(n * 3 // 2), "--seed", "9", "--as-of", AS_OF,
                    "--no-bad-rows", "--truth-table"], env=cluster.admin_env("load"), check=True, capture_output=True)
    cluster.psql(f"""UPDATE iap_receipts SET verify_status = NULL;
        DELETE FROM iap_receipts WHERE receipt_id NOT IN (
          SELECT receipt_id FROM sim_truth WHERE environment = 'production' AND forced_status IS NULL);
        DELETE FROM iap_receipts WHERE submitted_at < timestamptz '{AS_OF}' - interval '30 days'
                                    OR submitted_at > timestamptz '{AS_OF}';
        DELETE FROM iap_receipts WHERE receipt_id NOT IN (SELECT receipt_id FROM iap_receipts ORDER BY receipt_id LIMIT {n});
        GRANT CONNECT, TEMPORARY ON DATABASE load TO {JOB_ROLE};
        GRANT SELECT ON iap_products, iap_orders, iap_receipts, iap_grants TO {JOB_ROLE};
        CREATE SCHEMA recon AUTHORIZATION {JOB_ROLE};""", "load")
    work = tempfile.mkdtemp(prefix="iap-chaos-load.")
    sim = Simulator(work, "--latency-ms", "50", "--slow-share", "0.02", "--slow-ms", "2000", "--fault-rate", "0.05",
                    "--faults", "reset", "--seed", "11")
    start = time.monotonic()
    # The timeout (1.5 s) is below the slow tail (2 s): the tail becomes timeouts the job must retry.
    job = Job(["verify", "--as-of", AS_OF, "--concurrency", "64", "--sweep-limit", "0", "--progress", "never",
               "--timeout-ms", "1500"],
              job_env(cluster, "load", sim), work)
    status = job.wait()
    wall = time.monotonic() - start
    sim.stop()
    if status != 0:
        fail(f"verify exited {status}: {job.stderr()[-300:]}")
    total = int(cluster.psql("SELECT count(*) FROM iap_receipts", "load"))
    # Settled: a definitive answer; every receipt here is valid at Apple, but a few are another app's
    # (wrong_bundle). Any other rejection would be a lie believed.
    settled = int(cluster.psql("SELECT count(*) FROM recon.receipt_state WHERE definitive", "load"))
    foreign = int(cluster.psql("SELECT count(*) FROM recon.receipt_state WHERE definitive AND verdict = 'wrong_bundle'", "load"))
    wrong = int(cluster.psql("SELECT count(*) FROM recon.receipt_state WHERE definitive AND verdict = 'invalid_receipt'", "load"))
    unresolved = int(cluster.psql("SELECT count(*) FROM recon.receipt_state WHERE NOT definitive AND last_error <> ''", "load"))
    lost = total - settled - unresolved
    calls = sim.calls()
    timeouts = int(cluster.psql("SELECT count(*) FROM recon.verify_attempts WHERE problem LIKE '%imed out%'", "load"))
    figures = (f"receipts={total} settled={settled} ({settled / total * 100:.2f}%) unresolved_with_reason={unresolved} "
               f"(wrong_bundle {foreign}) invalid={wrong} lost={lost} requests={len(calls)} timeouts_retried={timeouts} "
               f"rate={total / wall:.0f}/s over the whole command")
    if settled < 0.99 * total or lost or wrong:
        figures += " reasons: " + cluster.psql("SELECT string_agg(e || ' x' || n, '; ') FROM (SELECT left(last_error, 60) e, "
                                               "count(*) n FROM recon.receipt_state WHERE NOT definitive OR verdict = 'invalid_receipt' "
                                               "GROUP BY 1 ORDER BY 2 DESC LIMIT 4) t", "load")
        fail(figures)
    return figures


# MARK: - an App Store that cannot be reached

class DeadHost:
    """A loopback App Store that fails in one way, in a thread of this script.

    silent: accepts every connection and never answers (the request times out);
    resets: reads the request, sends the status line, headers and the start of a body, then resets
            the connection (RST): an answer cut in the middle;
    tls:    answers the TLS handshake with plain text (the client's handshake fails)."""

    def __init__(self, kind):
        self.kind = kind
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(256)
        self.port = self.sock.getsockname()[1]
        self.held = []
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def base(self):
        return f"{'https' if self.kind == 'tls' else 'http'}://127.0.0.1:{self.port}"

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return  # stopped
            self.connections += 1
            if self.kind == "silent":
                self.held.append(conn)
            else:
                threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn):
        try:
            conn.settimeout(5)
            if self.kind == "tls":
                conn.recv(4096)  # the ClientHello
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                return
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n"
                         b'{"status":0,"receipt":{"bundle_id":"' + BUNDLE.encode() + b'","in_app":[')
            time.sleep(0.01)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close sends RST
        except OSError:
            pass
        finally:
            conn.close()

    def stop(self):
        self.sock.close()
        for conn in self.held:
            conn.close()


# Every unreachable-host scenario shares two databases: "unreach" (nothing is ever believed there, so
# each scenario finds the same receipts unresolved) and "unreach_api" (its receipts answered by the
# simulator once, so that its runs ask only the Server API).
_unreachable = {}
DEAD_TIMEOUT_MS = 1000


def unreachable_setup(cluster, quick):
    if _unreachable:
        return _unreachable
    work, _, refunds = cluster.new_database("unreach", 400 if quick else 1500)
    # The receipts the night asks about (contract, 'Which receipts are verified'; its few input errors included).
    candidates = int(cluster.psql(f"""SELECT count(*) FROM iap_receipts r
        WHERE r.submitted_at BETWEEN timestamptz '{AS_OF}' - interval '30 days' AND timestamptz '{AS_OF}'
          AND NOT (coalesce(r.verify_status, -1) IN (0, 21006) AND EXISTS (
                   SELECT 1 FROM iap_grants g WHERE g.transaction_id = r.transaction_id AND g.revoked_at IS NULL))""",
                                  "unreach"))
    api_work, _, api_refunds = cluster.new_database("unreach_api", 200, seed=43)
    key = os.path.join(api_work, "key.p8")
    subprocess.run([f"{BIN}/iap-sim", "keygen", "--out", key], check=True, capture_output=True)
    sim = Simulator(api_work, "--refunds", api_refunds)
    warm = Job(run_args(os.path.join(api_work, "reports")), job_env(cluster, "unreach_api", sim), api_work)
    if warm.wait() != 0:
        sim.stop()
        fail(f"the Server API database's first night (without the API) failed: {warm.stderr()[-300:]}")
    _unreachable.update(work=work, candidates=candidates, api_work=api_work, sim=sim, key=key,
                        api_env={"IAP_ISSUER_ID": "57246542-96fe-1a63-e053-0824d011072a", "IAP_KEY_ID": "CHAOSKEY01",
                                 "IAP_PRIVATE_KEY_FILE": key})
    return _unreachable


def unreachable_host(cluster, quick, kind):
    """verifyReceipt, the Server API sweeps and lookup against a host that never gives an HTTP answer:
    each exits 75 with one line naming the host and curl's reason, within --timeout-ms + 15 s and 5
    CPU-seconds; nothing is believed and every receipt is left for the next night."""
    s = unreachable_setup(cluster, quick)
    host = DeadHost(kind) if kind in ("silent", "resets", "tls") else None
    if kind == "unresolvable":
        base, names = "https://apple.invalid", "apple.invalid"
    elif kind == "refuses":
        port = free_port()
        base, names = f"http://127.0.0.1:{port}", f"127.0.0.1:{port}"
    else:
        base, names = host.base(), f"127.0.0.1:{host.port}"
    limit_s, limit_cpu = DEAD_TIMEOUT_MS / 1000 + 15, 5.0
    timeout = ["--timeout-ms", str(DEAD_TIMEOUT_MS)]
    results, problems = [], []

    def measured(label, job, contains):
        job.wait(timeout=limit_s * 4)
        line = [l for l in job.stderr().splitlines() if l.startswith("iap-reconcile:")]
        figures = f"{label}={job.status if job.status is not None else 'killed'} {job.seconds:.1f}s {job.cpu:.2f}cpu"
        results.append(figures)
        if job.status is None:
            problems.append(f"{label} still running after {limit_s * 4:.0f} s: killed")
        elif job.status != 75 or len(line) != 1 or names not in line[0] or contains not in line[0]:
            problems.append(f"{label}: expected exit 75 with one line naming {names}, got {job.status}: "
                            f"{job.stderr()[-300:]!r}")
        elif job.seconds > limit_s or job.cpu > limit_cpu:
            problems.append(f"{label} took {job.seconds:.1f} s and {job.cpu:.2f} CPU-s "
                            f"(at most {limit_s:.0f} s and {limit_cpu:.0f} CPU-s)")
        return line[0] if line else ""

    try:
        # 1. verifyReceipt: production and the sandbox both at the dead host.
        out = os.path.join(s["work"], "reports")
        env = job_env(cluster, "unreach", None, IAP_VERIFY_URL_PRODUCTION=base + "/verifyReceipt",
                      IAP_VERIFY_URL_SANDBOX=base + "/verifyReceipt")
        measured("verify_receipt", Job(["run", "--as-of", AS_OF, "--out", out, "--progress", "never", *timeout],
                                       env, s["work"]), "the App Store is unreachable")
        requests = int(cluster.psql("SELECT count(*) FROM recon.verify_attempts WHERE run_id = "
                                    "(SELECT max(run_id) FROM recon.verify_attempts)", "unreach") or 0)
        believed = int(cluster.psql("SELECT count(*) FROM recon.receipt_state WHERE definitive", "unreach"))
        waiting = int(cluster.psql("SELECT count(*) FROM recon.receipt_state WHERE next_eligible_at > now()", "unreach"))
        results.append(f"(receipts={s['candidates']} requests={requests} believed={believed} held_back={waiting})")
        if believed or waiting:
            problems.append(f"{believed} receipts believed and {waiting} held back from the next night")
        if os.path.exists(os.path.join(out, DAY)):
            problems.append("a report folder was written")
        # 2. The Server API's sweeps (notification and transaction history) at the dead host; verifyReceipt
        # at the simulator, which has nothing left to answer.
        api = dict(s["api_env"], IAP_API_URL_PRODUCTION=base, IAP_API_URL_SANDBOX=base)
        measured("server_api", Job(["run", "--as-of", AS_OF, "--out", os.path.join(s["api_work"], "reports"),
                                    "--progress", "never", "--sweep-limit", "0", *timeout],
                                   job_env(cluster, "unreach_api", s["sim"], **api), s["api_work"]),
                 "the App Store Server API is unreachable")
        # 3. lookup, one request at a time.
        measured("lookup", Job(["lookup", "--transaction", "2000000000000001", *timeout],
                               job_env(cluster, "unreach_api", None, **api), s["api_work"]),
                 "the App Store Server API is unreachable")
    finally:
        if host:
            host.stop()
    figures = " ".join(results)
    if problems:
        fail(figures + ": " + "; ".join(problems))
    return figures


def host_unresolvable(cluster, quick):
    return unreachable_host(cluster, quick, "unresolvable")


def host_refuses(cluster, quick):
    return unreachable_host(cluster, quick, "refuses")


def host_tls_fails(cluster, quick):
    return unreachable_host(cluster, quick, "tls")


def host_silent(cluster, quick):
    return unreachable_host(cluster, quick, "silent")


def host_resets(cluster, quick):
    return unreachable_host(cluster, quick, "resets")


SCENARIOS = [("crash-loop", crash_loop), ("database-gone", database_gone), ("app-store-lies", app_store_lies),
             ("secrets", secrets), ("privileges", privileges), ("load", load),
             ("host-unresolvable", host_unresolvable), ("host-refuses", host_refuses), ("host-tls-fails", host_tls_fails),
             ("host-silent", host_silent), ("host-resets", host_resets)]


def main():
    global BIN
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="the CI form: smaller data, fewer kills and fuzz inputs")
    parser.add_argument("--seed", type=int, default=2026, help="seed of the kill points")
    parser.add_argument("--only", help="comma list of scenarios to run")
    a = parser.parse_args()
    # IAP_CHAOS_BIN: another build folder (a debug build, to try a deliberate fault quickly).
    BIN = os.environ.get("IAP_CHAOS_BIN") or subprocess.run(
        ["swift", "build", "-c", "release", "--show-bin-path"], cwd=ROOT, capture_output=True, text=True,
        check=True).stdout.strip()
    rng = random.Random(a.seed)
    cluster = Cluster()
    failed = 0
    started = time.monotonic()
    try:
        for name, scenario in SCENARIOS:
            if a.only and name not in a.only.split(","):
                continue
            t = time.monotonic()
            try:
                args = (cluster, a.quick, rng) if scenario is crash_loop else (cluster, a.quick)
                figures = scenario(*args)
                print(f"PASS {name:15} {time.monotonic() - t:6.1f}s  {figures}", flush=True)
            except Exception as e:  # noqa: BLE001 - every failure is a FAIL line, then the next scenario
                failed += 1
                print(f"FAIL {name:15} {time.monotonic() - t:6.1f}s  {e}", flush=True)
            finally:
                # A failed scenario left its simulators running (the shared one of the unreachable
                # scenarios stays to the end).
                for sim in list(Simulator.running):
                    if sim is not _unreachable.get("sim"):
                        sim.stop()
    finally:
        if _unreachable:
            _unreachable["sim"].stop()
        cluster.destroy()
    total = sum(1 for n, _ in SCENARIOS if not a.only or n in a.only.split(","))
    print(f"{'quick' if a.quick else 'full'} run, seed {a.seed}, {time.monotonic() - started:.0f} s")
    print(f"chaos: {total - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


BIN = ""
if __name__ == "__main__":
    main()
