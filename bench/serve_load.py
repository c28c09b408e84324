#!/usr/bin/env python3
"""Fault and load harness for `s2s serve` (issue 27, item 3): starts the server, runs a fixed set
of load and hostile-client probes against it on loopback, stops it with SIGINT and prints ONE
markdown table. A benchmark, not part of CI. Python 3 standard library only.

  bench/serve_load.py --s2s BIN --model MODEL_DIR [--port 0] [--src FILE] [--lang en|de]
      [--requests 640] [--levels 1,8,64] [--half-open 300] [--hold 40] [--abandon-after 2]
      [--refuse-hold 40] [--shutdown-wait 20] [--client-timeout 30] [--start-timeout 180]
      [--log FILE] [--out FILE] [--quick] [-- EXTRA SERVE FLAGS, e.g. --max-batch 16 --timeout-ms 10000]

The server runs as `BIN serve --model MODEL_DIR --addr 127.0.0.1:PORT EXTRA...` (PORT 0 picks a
free one), its stderr (one JSON line per request) goes to --log (default a temporary file,
named under the table). Probes, in this order, on one server process:

  1. start: time from spawning to the first 200 of GET /health; RSS (VmRSS of
     /proc/PID/status) at start; GET /health/live, /health/ready, /metrics (status codes);
  2. hostile input: a POST with `Content-Type: text/plain` and `Origin: http://evil.example`,
     a POST with `Host: evil.example` (status codes), and the texts `<pad> <pad>`,
     `<eos> a <eos>`, `</s> a </s>`, `<unk>` and "" (status, the source tokens the model saw,
     the first translation);
  3. load: at each of --levels concurrent clients, every client sends one-sentence
     POST /v1/translate requests (default options) back to back on a keep-alive connection,
     --requests // clients each (at least 1): p50 and p99 latency of the 2xx replies,
     sentences/s (2xx sentences / wall time of the level), and the status codes;
  4. worst case: the worst request the server's limits allow (read from GET /health "limits",
     else the defaults of crates/s2s-serve/src/api.rs: 64 sentences, 200 tokens, beam 16,
     64 KiB bodies): max_sentences copies of one sentence of ordinary words as close to
     max_tokens tokens as the tokenizer allows (measured by a greedy request first),
     beam = nbest = max_beam, attention on. Its status, reply size and time, the peak RSS while
     it runs, and p50/p99/max of one-word requests sent one after another while it runs (their
     times whatever their status: a 504 waited too);
  5. abandoned: the same worst request from a raw socket closed after --abandon-after s, then
     the time a one-word request takes (next to the idle time of a one-word request);
  6. half-open: --half-open connections that each send half a request header and wait. RSS,
     whether GET /health and a translate request answer during it (client timeouts; a
     timeout is reported, never waited out), and how many of the connections the server still
     holds open after --hold s (polled every second; the time they all closed if they did);
  7. refuse to read: two clients (SO_RCVBUF 4 KiB) send the worst request and never read the
     reply. Once both replies have begun to arrive (or GET /health stats count both decoded):
     1 s later RSS, /health and a translate request, and the state and send queue of the
     server's end of the two connections (/proc/net/tcp); the same --refuse-hold s later (does
     the server give up on them?); RSS after the two clients close;
  8. shutdown: one connection holds a half-sent body (Content-Length larger than what was sent)
     when SIGINT arrives: the time to exit, or, after --shutdown-wait s, whether a second SIGINT
     ends it within 5 s. SIGKILL in the end whatever happened. Then a second server process is
     started and stopped with SIGINT with no client connected (start and shutdown times).

Every probe is bounded in count and time and uses 127.0.0.1 only; the server is killed in a
`finally` (nothing is left running). A probe that fails reports what happened (status code,
"timeout after X s", the exception) in its row instead of stopping the run. --quick shortens
every wait and count (hold 12 s, abandon 1 s, refuse-hold 2 s, shutdown wait 12 s, 48 requests
per level, 10 s client timeouts) for a smoke test. Worst-case requests are as large as the server's
limits: for a smoke run of a debug build, shrink them with serve flags after `--` (e.g.
`-- --max-sentences 4 --max-beam 4 --max-tokens 40`).

When --max-beam is below the default beam (5), normal requests send beam = max_beam (noted under
the table). Sentences: --src FILE (lines of 1 to 30 words, at most 1000) or built-in short sentences in
--lang (en, default, or de: pick the model's source language). The table's header line gives the
date, the CPU (lscpu), the load average before and after, the commit and the command; run it on
an otherwise idle machine with a release build (a warning is printed above load 0.5).
"""

import argparse
import datetime
import http.client
import json
import os
import random
import resource
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

SENTENCES = {
    "en": [
        "I love China.", "Where is the station?", "Tom is reading a book.",
        "It is raining today.", "Thank you very much.", "What time is it?",
        "She likes green tea.", "We are going home now.", "This is my friend.",
        "The weather is nice.", "He works in a hospital.", "I don't know.",
        "Please close the door.", "My father is a teacher.", "Can you help me?",
        "The cat is sleeping.", "I have two brothers.", "Let's eat dinner.",
        "How much is this?", "I want to go to Beijing.",
    ],
    "de": [
        "Ich liebe China.", "Wo ist der Bahnhof?", "Tom liest ein Buch.",
        "Heute regnet es.", "Vielen Dank.", "Wie spät ist es?",
        "Sie trinkt gern grünen Tee.", "Wir gehen jetzt nach Hause.", "Das ist mein Freund.",
        "Das Wetter ist schön.", "Er arbeitet in einem Krankenhaus.", "Ich weiß es nicht.",
        "Bitte schließ die Tür.", "Mein Vater ist Lehrer.", "Kannst du mir helfen?",
        "Die Katze schläft.", "Ich habe zwei Brüder.", "Lass uns zu Abend essen.",
        "Was kostet das?", "Ich will nach Berlin fahren.",
    ],
}
ONE_WORD = {"en": "Hello.", "de": "Hallo."}
# crates/s2s-serve/src/api.rs Limits::default() and the --timeout-ms default of `s2s serve`.
DEFAULT_LIMITS = {"max_body_bytes": 64 * 1024, "max_tokens": 200, "max_sentences": 64,
                  "max_beam": 16, "timeout_ms": 30_000}
MiB = 1024 * 1024
DEFAULT_BEAM = 5  # s2s_infer::defaults::BEAM, the beam of a request without "beam"


# ----------------------------------------------------------------------------------------------
# small helpers

def log(msg):
    print(f"[serve_load {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def pct(xs, p):
    """Nearest-rank percentile of xs (seconds) or None."""
    if not xs:
        return None
    s = sorted(xs)
    k = max(0, min(len(s) - 1, -(-len(s) * p // 100) - 1))
    return s[int(k)]


def ms(x):
    return "-" if x is None else (f"{x * 1000:.0f} ms" if x < 10 else f"{x:.1f} s")


def secs(x):
    return "-" if x is None else f"{x:.2f} s"


def mib(kb):
    return "?" if kb is None else f"{kb / 1024:.0f} MiB"


def size(n):
    if n is None:
        return "?"
    if n >= MiB:
        return f"{n / MiB:.1f} MiB"
    if n >= 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n} B"


def trunc(s, limit=160):
    s = str(s).replace("\n", " ").replace("\r", " ")
    return s if len(s) <= limit else s[: limit - 1] + "…"


def cell(s, limit=160):
    """Text safe inside a markdown table cell."""
    s = str(s).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("\r", " ")
    return s if len(s) <= limit else s[: limit - 1] + "…"


def statuses(counter):
    return ", ".join(f"{k}: {v}" for k, v in sorted(counter.items(), key=lambda kv: str(kv[0])))


def proc_status(pid):
    """(VmRSS, VmHWM) in kB, or (None, None) when the process is gone."""
    rss = hwm = None
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("VmHWM:"):
                    hwm = int(line.split()[1])
    except OSError:
        pass
    return rss, hwm


class RssSampler:
    """Samples VmRSS every 0.1 s in a thread; .peak is the largest seen (kB)."""

    def __init__(self, pid):
        self.pid, self.peak, self._stop = pid, None, threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            rss, _ = proc_status(self.pid)
            if rss is not None and (self.peak is None or rss > self.peak):
                self.peak = rss
            self._stop.wait(0.1)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join(2)


class Reply:
    """One HTTP exchange: status (None when none came), body (up to `keep` bytes), size (all
    bytes of the body), time (s), error (text) and headers."""

    def __init__(self):
        self.status = None
        self.body = b""
        self.size = 0
        self.time = None
        self.error = None
        self.headers = {}
        self.stale = False

    def json(self):
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def ok(self):
        return self.status is not None and 200 <= self.status < 300

    def outcome(self):
        """'200 after 0.12 s' or 'timeout after 10 s'."""
        if self.status is None:
            return self.error or "no reply"
        return f"{self.status} after {secs(self.time)}"

    def with_error(self):
        """The status and, for an error reply, its message."""
        j = self.json() if self.status is not None and not self.ok() else None
        if isinstance(j, dict) and isinstance(j.get("error"), str):
            return f"{self.describe()} ({trunc(j['error'], 100)})"
        return self.describe()

    def describe(self):
        if self.status is None:
            return self.error or "no reply"
        return str(self.status)


class Client:
    """A keep-alive HTTP/1.1 client on 127.0.0.1:port whose every exchange has a total deadline
    (`timeout` s): it reconnects after any failure and never waits longer than that."""

    def __init__(self, port, timeout):
        self.port, self.timeout, self.conn = port, timeout, None

    def close(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except OSError:
                pass
            self.conn = None

    def request(self, method, path, body=None, headers=None, keep=1 << 20, timeout=None):
        timeout = self.timeout if timeout is None else timeout
        r = Reply()
        h = {"Connection": "keep-alive"}
        if isinstance(body, (dict, list)):
            body = json.dumps(body, ensure_ascii=False).encode()
            h["Content-Type"] = "application/json"
        elif isinstance(body, str):
            body = body.encode()
        h.update(headers or {})
        t0 = time.monotonic()
        deadline = t0 + timeout
        for attempt in (0, 1):
            reused = self.conn is not None
            r = self._exchange(method, path, body, h, keep, timeout, t0, deadline, r)
            # A kept-alive connection the server closed meanwhile: retry once on a new one.
            if not (reused and r.status is None and r.stale) or attempt == 1:
                return r
            r = Reply()
        return r

    def _exchange(self, method, path, body, h, keep, timeout, t0, deadline, r):
        r.stale = False

        def left():
            x = deadline - time.monotonic()
            if x <= 0:
                raise socket.timeout()
            return x

        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=left())
                self.conn.connect()
            self.conn.sock.settimeout(left())
            self.conn.request(method, path, body=body, headers=h)
            self.conn.sock.settimeout(left())
            resp = self.conn.getresponse()
            r.status = resp.status
            r.headers = {k.lower(): v for k, v in resp.getheaders()}
            chunks = []
            while True:
                if self.conn.sock is not None:
                    self.conn.sock.settimeout(left())
                b = resp.read(1 << 16)
                if not b:
                    break
                r.size += len(b)
                if r.size - len(b) < keep:
                    chunks.append(b)
            r.body = b"".join(chunks)[:keep]
            r.time = time.monotonic() - t0
            if resp.will_close:
                self.close()
        except (socket.timeout, TimeoutError):
            r.error = f"timeout after {timeout:g} s"
            r.time = time.monotonic() - t0
            self.close()
        except (OSError, http.client.HTTPException) as e:
            r.stale = isinstance(e, (http.client.RemoteDisconnected, BrokenPipeError,
                                     ConnectionResetError)) and r.status is None
            r.error = f"{type(e).__name__}: {e}".strip().rstrip(":")
            r.time = time.monotonic() - t0
            self.close()
        return r


def once(port, method, path, body=None, headers=None, timeout=10.0, keep=1 << 20):
    c = Client(port, timeout)
    try:
        return c.request(method, path, body, headers, keep=keep)
    finally:
        c.close()


def raw_request(port, body, host=None, extra_headers=""):
    """The bytes of a POST /v1/translate with a JSON body."""
    data = json.dumps(body, ensure_ascii=False).encode() if not isinstance(body, bytes) else body
    head = (f"POST /v1/translate HTTP/1.1\r\nHost: {host or f'127.0.0.1:{port}'}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n{extra_headers}\r\n")
    return head.encode() + data


def peer_state(sock):
    """'open' when the server keeps the connection without a word, 'closed' when it closed or
    reset it, 'answered' when it sent something (e.g. a 408)."""
    try:
        b = sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        return "answered" if b else "closed"
    except (BlockingIOError, InterruptedError):
        return "open"
    except OSError:
        return "closed"


TCP_STATES = {"01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1",
              "05": "FIN_WAIT2", "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT",
              "09": "LAST_ACK", "0A": "LISTEN", "0B": "CLOSING"}


def server_side_queues(server_port, client_ports):
    """[(state, tx_queue bytes)] of the server's end of the given client connections, from
    /proc/net/tcp (IPv4 loopback)."""
    out = []
    want = {p for p in client_ports}
    try:
        with open("/proc/net/tcp") as f:
            next(f)
            for line in f:
                parts = line.split()
                local, remote, st, queues = parts[1], parts[2], parts[3], parts[4]
                lport = int(local.split(":")[1], 16)
                rport = int(remote.split(":")[1], 16)
                if lport == server_port and rport in want:
                    tx = int(queues.split(":")[0], 16)
                    out.append((TCP_STATES.get(st, st), tx))
    except OSError:
        pass
    return out


# ----------------------------------------------------------------------------------------------
# the server process

class Server:
    def __init__(self, args, port, log_path, nofile):
        self.args, self.port, self.log_path, self.nofile = args, port, log_path, nofile
        self.proc = None
        self.start_time = None

    def start(self):
        cmd = [self.args.s2s, "serve", "--model", self.args.model,
               "--addr", f"127.0.0.1:{self.port}"] + self.args.extra
        self.logf = open(self.log_path, "ab")
        self.logf.write(f"\n# {shlex.join(cmd)}\n".encode())
        self.logf.flush()
        nofile = self.nofile

        def child():
            # The server keeps the open-file limit the harness was started with.
            resource.setrlimit(resource.RLIMIT_NOFILE, nofile)

        t0 = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.logf,
                                     stderr=self.logf, start_new_session=True, preexec_fn=child)
        deadline = t0 + self.args.start_timeout
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"s2s serve exited with {self.proc.returncode} while starting; "
                                   f"its log: {self.log_path}\n{self.tail()}")
            r = once(self.port, "GET", "/health", timeout=2)
            if r.status == 200:
                self.start_time = time.monotonic() - t0
                return r
            last = r.describe()
            time.sleep(0.2)
        raise RuntimeError(f"no 200 from GET /health within {self.args.start_timeout} s "
                           f"(last: {last}); log: {self.log_path}\n{self.tail()}")

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def tail(self, n=20):
        try:
            with open(self.log_path, "rb") as f:
                return b"\n".join(f.read().splitlines()[-n:]).decode(errors="replace")
        except OSError:
            return ""

    def wait_exit(self, seconds):
        """Seconds until the process exits, or None if it is still running after `seconds`."""
        t0 = time.monotonic()
        try:
            self.proc.wait(timeout=seconds)
            return time.monotonic() - t0
        except subprocess.TimeoutExpired:
            return None

    def signal(self, sig):
        if self.alive():
            try:
                self.proc.send_signal(sig)
            except ProcessLookupError:
                pass

    def kill(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    self.proc.kill()
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
        if getattr(self, "logf", None):
            self.logf.close()
            self.logf = None


# ----------------------------------------------------------------------------------------------
# the probes

class Harness:
    def __init__(self, args, server, sentences, lang):
        self.a, self.srv, self.port = args, server, server.port
        self.sentences, self.lang = sentences, lang
        self.one_word = ONE_WORD.get(lang, sentences[0].split()[0])
        self.rows = []  # (probe, result)
        self.notes = []
        self.limits = dict(DEFAULT_LIMITS)
        self.worst = None  # the worst request's body
        # A worst-case request may take the server's whole --timeout-ms: wait that and more.
        self.worst_timeout = DEFAULT_LIMITS["timeout_ms"] / 1000 + args.client_timeout
        self.worst_desc = ""
        # Options of every normal request: the server's defaults, unless its --max-beam is
        # below the default beam (then beam = max_beam; see probe_start).
        self.normal_opts = {}

    def row(self, probe, result):
        self.rows.append((probe, result))
        log(f"{probe}: {result}")

    def rss(self):
        return proc_status(self.srv.proc.pid)

    def translate(self, text, timeout=None, **opts):
        body = {"text": text}
        body.update(self.normal_opts)
        body.update(opts)
        return once(self.port, "POST", "/v1/translate", body,
                    timeout=self.a.client_timeout if timeout is None else timeout)

    def health_and_translate(self, timeout=None):
        """Whether GET /health and a one-sentence translate answer (text for the table)."""
        t = self.a.probe_timeout if timeout is None else timeout
        h = once(self.port, "GET", "/health", timeout=t)
        tr = self.translate(self.sentences[0], timeout=t)
        return (f"/health {h.outcome()}; translate {tr.outcome()}")

    def stats(self):
        r = once(self.port, "GET", "/health", timeout=self.a.probe_timeout)
        j = r.json() if r.status is not None else None
        return j.get("stats") if isinstance(j, dict) else None

    def wait_idle(self, bound):
        """Waits (at most `bound` s) until a one-word request is answered 2xx: the worker then
        has finished what was queued before it."""
        deadline = time.monotonic() + bound
        while time.monotonic() < deadline and self.srv.alive():
            r = self.translate(self.one_word, timeout=max(1.0, deadline - time.monotonic()))
            if r.ok():
                return True
            time.sleep(0.5)
        return False

    # 1 ------------------------------------------------------------------------------------
    def probe_start(self, health):
        j = health.json() or {}
        lim = j.get("limits") if isinstance(j, dict) else None
        if isinstance(lim, dict):
            for k in list(DEFAULT_LIMITS) + ["max_attention_cells"]:
                if isinstance(lim.get(k), int):
                    self.limits[k] = lim[k]
            src = "from GET /health"
        else:
            src = "not in GET /health: api.rs defaults assumed"
        model = j.get("model", {}) if isinstance(j, dict) else {}
        self.worst_timeout = self.limits["timeout_ms"] / 1000 + self.a.client_timeout
        rss, hwm = self.rss()
        self.rss_start = rss
        self.row("start: spawn to first 200 of GET /health",
                 f"{secs(self.srv.start_time)}; RSS {mib(rss)}; model "
                 f"{trunc(model.get('arch', '?'))}, {model.get('params', '?')} parameters")
        self.notes.append(f"Limits ({src}): " + ", ".join(f"{k} {v}" for k, v in self.limits.items()))
        if self.limits["max_beam"] < DEFAULT_BEAM:
            self.normal_opts = {"beam": self.limits["max_beam"]}
            r = once(self.port, "POST", "/v1/translate", {"text": self.one_word},
                     timeout=self.a.client_timeout)
            self.notes.append(f"--max-beam {self.limits['max_beam']} is below the default beam "
                              f"{DEFAULT_BEAM}: a request without \"beam\" got {r.with_error()}; "
                              f"normal requests here send beam {self.limits['max_beam']}.")
        out = []
        for path in ("/health/live", "/health/ready", "/metrics"):
            r = once(self.port, "GET", path, timeout=self.a.probe_timeout)
            extra = ""
            if path == "/metrics" and r.ok():
                lines = [l for l in r.body.decode(errors="replace").splitlines()
                         if l and not l.startswith("#")]
                extra = f" ({len(lines)} samples)"
            out.append(f"{path} {r.with_error()}{extra}")
        self.row("other routes", "; ".join(out))
        idle = [self.translate(self.one_word) for _ in range(3)]
        self.idle_one_word = pct([r.time for r in idle if r.ok()], 50)
        self.row(f"one-word request ({self.one_word!r}), idle, median of 3",
                 f"{ms(self.idle_one_word)} (status {', '.join(r.describe() for r in idle)})")

    # 2 ------------------------------------------------------------------------------------
    def probe_hostile_input(self):
        body = json.dumps({"text": self.sentences[0]}).encode()
        r = once(self.port, "POST", "/v1/translate", body,
                 {"Content-Type": "text/plain", "Origin": "http://evil.example"},
                 timeout=self.a.probe_timeout)
        acao = r.headers.get("access-control-allow-origin")
        self.row("POST, Content-Type: text/plain, Origin: http://evil.example",
                 r.with_error() + (f", Access-Control-Allow-Origin: {acao}" if acao else ""))
        r = once(self.port, "POST", "/v1/translate", {"text": self.sentences[0]},
                 {"Host": "evil.example"}, timeout=self.a.probe_timeout)
        self.row("POST, Host: evil.example", r.with_error())
        for text in ["<pad> <pad>", "<eos> a <eos>", "</s> a </s>", "<unk>", ""]:
            r = self.translate(text, timeout=self.a.probe_timeout)
            j = r.json()
            res = r.describe()
            try:
                t = j["translations"][0]
                res += (f"; src_tokens {trunc(json.dumps(t.get('src_tokens'), ensure_ascii=False), 60)}"
                        f"; translation {trunc(json.dumps(t['hyps'][0]['text'], ensure_ascii=False), 60)}")
            except (TypeError, KeyError, IndexError):
                if isinstance(j, dict) and "error" in j:
                    res += f"; {trunc(j['error'], 80)}"
            self.row(f"text {json.dumps(text)}", res)

    # 3 ------------------------------------------------------------------------------------
    def probe_load(self):
        for clients in self.a.levels:
            per = max(1, self.a.requests // clients)
            lat, stat, sents = [], {}, [0]
            lock = threading.Lock()
            start = threading.Barrier(clients + 1)

            def worker(i):
                c = Client(self.port, self.a.client_timeout)
                rnd = random.Random(i)
                mine, my_stat = [], {}
                try:
                    start.wait(60)
                    for _ in range(per):
                        r = c.request("POST", "/v1/translate",
                                      {"text": rnd.choice(self.sentences), **self.normal_opts})
                        key = r.status if r.status is not None else r.error
                        my_stat[key] = my_stat.get(key, 0) + 1
                        if r.ok():
                            mine.append(r.time)
                finally:
                    c.close()
                with lock:
                    lat.extend(mine)
                    sents[0] += len(mine)
                    for k, v in my_stat.items():
                        stat[k] = stat.get(k, 0) + v

            ts = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(clients)]
            for t in ts:
                t.start()
            start.wait(60)
            t0 = time.monotonic()
            bound = per * self.a.client_timeout + 10
            for t in ts:
                t.join(max(0.1, t0 + bound - time.monotonic()))
            wall = time.monotonic() - t0
            hung = sum(t.is_alive() for t in ts)
            rate = sents[0] / wall if wall > 0 else 0
            self.row(f"{clients} concurrent client{'s' if clients > 1 else ''}, "
                     f"{per * clients} one-sentence requests",
                     f"p50 {ms(pct(lat, 50))}, p99 {ms(pct(lat, 99))}, {rate:.1f} sentences/s; "
                     f"{statuses(stat)}" + (f"; {hung} clients still running" if hung else ""))
            if not self.srv.alive():
                break
        rss, hwm = self.rss()
        self.row("RSS after the load levels", f"{mib(rss)} (VmHWM {mib(hwm)})")

    # 4 ------------------------------------------------------------------------------------
    def build_worst(self):
        """The worst request the limits allow: max_sentences sentences of about max_tokens
        tokens, beam = nbest = max_beam, attention."""
        L = self.limits
        words = [w for s in self.sentences for w in s.split()]
        probe_n = min(50, max(5, L["max_tokens"] // 2))
        text = " ".join(words[i % len(words)] for i in range(probe_n))
        r = self.translate(text, beam=1, timeout=self.worst_timeout)
        ratio = 1.3
        try:
            ratio = max(0.5, len(r.json()["translations"][0]["src_tokens"]) / probe_n)
        except (TypeError, KeyError, IndexError):
            self.notes.append(f"calibration request ({probe_n} words) answered {r.describe()}: "
                              f"assumed {ratio} tokens per word")
        n_words = max(1, int(L["max_tokens"] * 0.97 / ratio))
        n_sent = L["max_sentences"]
        tokens = None
        for _ in range(12):
            text = " ".join(words[i % len(words)] for i in range(n_words))
            body = {"text": [text] * n_sent, "beam": L["max_beam"], "nbest": L["max_beam"],
                    "attention": True}
            if len(json.dumps(body, ensure_ascii=False).encode()) > L["max_body_bytes"]:
                n_words = max(1, int(n_words * 0.9))
                continue
            r = self.translate(text, beam=1, timeout=self.worst_timeout)
            if r.status == 422 and n_words > 1:
                n_words = max(1, int(n_words * 0.92))
                continue
            try:
                tokens = len(r.json()["translations"][0]["src_tokens"])
            except (TypeError, KeyError, IndexError):
                pass
            break
        cap = L.get("max_attention_cells")
        if cap is not None and tokens is not None:
            # The server refuses (422, before decoding) attention that could outgrow its cap:
            # nbest x source tokens x (longest output + 1) over the sentences, the longest
            # output being min(200, 2 x source tokens + 10) (s2s_infer::defaults).
            cells = n_sent * L["max_beam"] * tokens * (min(200, 2 * tokens + 10) + 1)
            if cells > cap:
                body["attention"] = False
                self.notes.append(f"Attention left out of the worst request: it could reach "
                                  f"{cells} weights, over the server's max_attention_cells "
                                  f"{cap} (a 422).")
        self.worst = body
        self.worst_bytes = len(json.dumps(body, ensure_ascii=False).encode())
        self.worst_desc = (f"{n_sent} x {n_words} words ({tokens if tokens is not None else '?'} "
                           f"tokens), beam {L['max_beam']}, nbest {L['max_beam']}"
                           f"{', attention' if body['attention'] else ''}; "
                           f"{size(self.worst_bytes)} body")
        self.notes.append(f"Worst request: {self.worst_desc}.")

    def probe_worst(self):
        self.build_worst()
        done = threading.Event()
        res = {}

        def big():
            try:
                res["r"] = once(self.port, "POST", "/v1/translate", self.worst,
                                timeout=self.worst_timeout, keep=0)
            finally:
                done.set()

        small = []
        small_stat = {}
        with RssSampler(self.srv.proc.pid) as samp:
            t = threading.Thread(target=big, daemon=True)
            t.start()
            time.sleep(0.1)
            c = Client(self.port, self.worst_timeout)
            try:
                while not done.is_set() and len(small) < 500:
                    r = c.request("POST", "/v1/translate",
                                  {"text": self.one_word, **self.normal_opts})
                    key = r.status if r.status is not None else r.error
                    small_stat[key] = small_stat.get(key, 0) + 1
                    small.append(r.time)  # whatever the status: the wait the client saw
                    if r.status is None:
                        break
            finally:
                c.close()
            done.wait(self.worst_timeout + 5)
        w = res.get("r")
        self.row("worst request the limits allow",
                 "no reply" if w is None else
                 f"{w.outcome()}, reply {size(w.size)}; peak RSS "
                 f"{mib(samp.peak)} (start {mib(self.rss_start)})")
        self.row("one-word requests sent one after another while it runs",
                 f"{sum(small_stat.values())} sent, times whatever the status: p50 {ms(pct(small, 50))}, "
                 f"p99 {ms(pct(small, 99))}, max {ms(max(small) if small else None)}; "
                 f"{statuses(small_stat) or 'the worst request ended first'}")

    # 5 ------------------------------------------------------------------------------------
    def probe_abandon(self):
        data = raw_request(self.port, self.worst)
        s = socket.create_connection(("127.0.0.1", self.port), timeout=self.a.probe_timeout)
        try:
            s.sendall(data)
            time.sleep(self.a.abandon_after)
        finally:
            s.close()
        r = self.translate(self.one_word, timeout=self.worst_timeout)
        self.row(f"worst request abandoned after {self.a.abandon_after:g} s, then a one-word request",
                 f"{r.outcome()} (idle: {ms(self.idle_one_word)})")
        if not r.ok():
            self.wait_idle(self.worst_timeout)

    # 6 ------------------------------------------------------------------------------------
    def probe_half_open(self):
        n = self.a.half_open
        half = (f"POST /v1/translate HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
                f"Content-Type: appl").encode()
        rss0, _ = self.rss()
        socks, failed = [], {}
        t0 = time.monotonic()
        open_deadline = t0 + (10 if self.a.quick else 30)
        in_a_row = 0
        try:
            for i in range(n):
                if time.monotonic() > open_deadline or in_a_row >= 3:
                    failed["not tried"] = n - i
                    break
                try:
                    s = socket.create_connection(("127.0.0.1", self.port), timeout=3)
                    s.sendall(half)
                    s.setblocking(False)
                    socks.append(s)
                    in_a_row = 0
                except OSError as e:
                    k = type(e).__name__
                    failed[k] = failed.get(k, 0) + 1
                    # Only connects that time out cost time: stop after three in a row.
                    in_a_row = in_a_row + 1 if isinstance(e, TimeoutError) else 0
            opened = time.monotonic()
            time.sleep(1)
            rss, _ = self.rss()
            during = self.health_and_translate()
            self.row(f"{n} half-open connections (half a header each)",
                     f"{len(socks)} connected" + (f", failed: {statuses(failed)}" if failed else "")
                     + f"; RSS {mib(rss0)} -> {mib(rss)}; {during}")
            all_closed = None
            counts = {}
            # Counted from when the last one was opened (the first ones have waited longer).
            t0 = opened
            while time.monotonic() - t0 < self.a.hold:
                counts = {}
                for s in socks:
                    st = peer_state(s)
                    counts[st] = counts.get(st, 0) + 1
                if socks and counts.get("open", 0) == 0 and all_closed is None:
                    all_closed = time.monotonic() - t0
                    break
                time.sleep(1)
            counts = {}
            for s in socks:
                st = peer_state(s)
                counts[st] = counts.get(st, 0) + 1
            waited = time.monotonic() - t0
            self.row(f"half-open connections still open after {waited:.0f} s",
                     f"{counts.get('open', 0)} of {len(socks)} open"
                     + (f", {counts['closed']} closed by the server" if counts.get("closed") else "")
                     + (f", {counts['answered']} answered (e.g. 408)" if counts.get("answered") else "")
                     + (f"; all closed {all_closed:.1f} s after opening" if all_closed else ""))
        finally:
            for s in socks:
                s.close()
        time.sleep(0.5)

    # 7 ------------------------------------------------------------------------------------
    def probe_refuse_read(self):
        data = raw_request(self.port, self.worst)
        before = self.stats() or {}
        rss0, _ = self.rss()
        socks = []
        samp = RssSampler(self.srv.proc.pid).__enter__()  # peak over decoding and holding
        try:
            for _ in range(2):
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                s.settimeout(self.a.probe_timeout)
                s.connect(("127.0.0.1", self.port))
                s.sendall(data)
                s.setblocking(False)  # peer_state and the peek below must never wait
                socks.append(s)
            # Wait (bounded) until both replies have begun to arrive, or the worker's counter
            # says both were decoded.
            t0 = time.monotonic()
            decoded = None
            while time.monotonic() - t0 < self.worst_timeout * 2:
                if all(peer_state(s) != "open" for s in socks):
                    decoded = time.monotonic() - t0
                    break
                st = self.stats()
                if st and "requests" in before and st.get("requests", 0) >= before["requests"] + 2:
                    decoded = time.monotonic() - t0
                    break
                time.sleep(0.5)
            held = time.monotonic()
            ports = [s.getsockname()[1] for s in socks]

            def queues():
                q = server_side_queues(self.port, ports)
                return ", ".join(f"{st}, {size(tx)} in the send queue" for st, tx in q) or "closed"

            time.sleep(1)
            rss1, _ = self.rss()
            during = self.health_and_translate()
            q1 = queues()
            time.sleep(max(0.0, held + self.a.refuse_hold - time.monotonic()))
            rss2, _ = self.rss()
            q2 = queues()
            first = []
            for s in socks:
                try:
                    b = s.recv(64, socket.MSG_PEEK | socket.MSG_DONTWAIT)
                    first.append(b.split(b"\r\n")[0].decode(errors="replace") or "closed")
                except (BlockingIOError, InterruptedError):
                    first.append("nothing yet")
                except OSError as e:
                    first.append(type(e).__name__)
            self.row("two clients send the worst request and never read the reply",
                     ("answered after " + secs(decoded) if decoded is not None
                      else f"no reply within {self.worst_timeout * 2:g} s")
                     + f"; 1 s later: RSS {mib(rss0)} -> {mib(rss1)}, {during}, server sockets: {q1}"
                     + f"; {self.a.refuse_hold:g} s later: RSS {mib(rss2)}, server sockets: {q2}"
                     + f"; peak RSS {mib(samp.peak)}; the clients' first line: "
                     + ", ".join(trunc(x, 40) for x in first))
        finally:
            samp.__exit__()
            for s in socks:
                s.close()
        time.sleep(1)
        rss, hwm = self.rss()
        self.row("RSS after the two clients closed", f"{mib(rss)} (VmHWM {mib(hwm)})")
        self.wait_idle(self.worst_timeout)

    # 8 ------------------------------------------------------------------------------------
    def probe_shutdown_stuck(self):
        body = json.dumps({"text": self.sentences[0]}).encode()
        head = (f"POST /v1/translate HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body) + 100}\r\n\r\n")
        s = socket.create_connection(("127.0.0.1", self.port), timeout=self.a.probe_timeout)
        try:
            s.sendall(head.encode() + body[: len(body) // 2])
            time.sleep(0.5)
            _, hwm = self.rss()
            self.row("VmHWM (peak RSS) before shutdown", mib(hwm))
            self.srv.signal(signal.SIGINT)
            t = self.srv.wait_exit(self.a.shutdown_wait)
            if t is not None:
                res = f"exited after {secs(t)} (exit status {self.srv.proc.returncode})"
            else:
                res = f"still running after {self.a.shutdown_wait:g} s; "
                self.srv.signal(signal.SIGINT)
                t2 = self.srv.wait_exit(self.a.second_wait)
                if t2 is not None:
                    res += (f"a second SIGINT: exited after {secs(t2)} "
                            f"(exit status {self.srv.proc.returncode})")
                else:
                    res += (f"a second SIGINT: still running after {self.a.second_wait:g} s; "
                            f"killed with SIGKILL")
            self.row("SIGINT while one client holds a half-sent body", res)
        finally:
            s.close()
            self.srv.kill()


def probe_clean_restart(args, port, log_path, nofile, rows, opts):
    """A second server: start time, one request, SIGINT with no client connected."""
    srv = Server(args, port, log_path, nofile)
    try:
        srv.start()
        r = once(port, "POST", "/v1/translate", {"text": "x", **opts}, timeout=args.client_timeout)
        srv.signal(signal.SIGINT)
        t = srv.wait_exit(args.shutdown_wait)
        res = (f"start {secs(srv.start_time)}; " +
               (f"exited {secs(t)} after SIGINT (exit status {srv.proc.returncode})" if t is not None
                else f"still running {args.shutdown_wait:g} s after SIGINT; killed"))
        rows.append(("second server: start, one request "
                     f"({r.describe()}), SIGINT with no client connected", res))
    except Exception as e:  # noqa: BLE001 - reported in the table
        rows.append(("second server: start and SIGINT with no client", f"harness error: {trunc(e, 120)}"))
    finally:
        srv.kill()
    log(f"{rows[-1][0]}: {rows[-1][1]}")


# ----------------------------------------------------------------------------------------------

def machine_line(load0, load1, s2s):
    cpu = "?"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    if cpu == "?":
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if line.startswith("model name"):
                        cpu = line.split(":", 1)[1].strip()
                        break
        except OSError:
            pass
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        commit = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip() or "?"
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        if dirty:
            commit += " (with uncommitted changes)"
    except OSError:
        commit = "?"
    try:
        ver = subprocess.run([s2s, "--version"], capture_output=True, text=True,
                             timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        ver = ""
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    return (f"Measured {stamp} on {cpu}, {os.cpu_count()} CPUs (`lscpu`); 1-minute load average "
            f"{load0} before, {load1} after (after includes the harness itself); commit {commit}; "
            f"{ver or 's2s'}.")


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return f.read().split()[0]
    except OSError:
        return "?"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def parse_args(argv):
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Flags after `--` are passed to `s2s serve`. See the top of this file for the probes.")
    p.add_argument("--s2s", required=True, help="the s2s binary")
    p.add_argument("--model", required=True, help="MODEL_DIR to serve")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: a free one)")
    p.add_argument("--src", help="sentences, one per line (else built-in ones in --lang)")
    p.add_argument("--lang", default="en", choices=sorted(SENTENCES),
                   help="language of the built-in sentences (the model's source language)")
    p.add_argument("--requests", type=int, default=None,
                   help="requests per load level, split over its clients (default 640; quick 48)")
    p.add_argument("--levels", default="1,8,64", help="concurrent clients per load level")
    p.add_argument("--half-open", type=int, default=300, help="half-open connections")
    p.add_argument("--hold", type=float, default=None,
                   help="seconds before counting the half-open connections still open (default 40)")
    p.add_argument("--abandon-after", type=float, default=None,
                   help="seconds before the abandoning client closes (default 2)")
    p.add_argument("--refuse-hold", type=float, default=None,
                   help="seconds the non-reading clients hold their connections (default 40)")
    p.add_argument("--shutdown-wait", type=float, default=None,
                   help="seconds to wait for an exit after SIGINT (default 20)")
    p.add_argument("--client-timeout", type=float, default=None,
                   help="total seconds per normal request (default 30)")
    p.add_argument("--start-timeout", type=float, default=180,
                   help="seconds to wait for the first 200 of GET /health")
    p.add_argument("--log", help="file for the server's stderr (default a temporary file)")
    p.add_argument("--out", help="also write the header, command and table to this file")
    p.add_argument("--quick", action="store_true", help="short waits and counts: a smoke test")
    a = p.parse_args(argv)
    q = a.quick
    a.extra = extra
    if any(x == "--addr" or x.startswith("--addr=") for x in extra):
        p.error("the harness sets --addr itself (use --port)")
    a.requests = a.requests if a.requests is not None else (48 if q else 640)
    a.hold = a.hold if a.hold is not None else (12 if q else 40)
    a.abandon_after = a.abandon_after if a.abandon_after is not None else (1 if q else 2)
    a.refuse_hold = a.refuse_hold if a.refuse_hold is not None else (2 if q else 40)
    a.shutdown_wait = a.shutdown_wait if a.shutdown_wait is not None else (12 if q else 20)
    a.second_wait = 2 if q else 5
    a.client_timeout = a.client_timeout if a.client_timeout is not None else (10 if q else 30)
    a.probe_timeout = min(a.client_timeout, 5 if q else 10)
    try:
        a.levels = [int(x) for x in a.levels.split(",") if x.strip()]
    except ValueError:
        p.error("--levels takes numbers such as 1,8,64")
    if not a.levels or min(a.levels) < 1 or max(a.levels) > 512:
        p.error("--levels: between 1 and 512 clients")
    if not 0 <= a.half_open <= 5000:
        p.error("--half-open: at most 5000")
    if not os.access(a.s2s, os.X_OK):
        p.error(f"no executable at {a.s2s}")
    if not os.path.isdir(a.model):
        p.error(f"no model folder at {a.model}")
    return a


def main(argv):
    a = parse_args(argv)
    cmdline = "bench/serve_load.py " + shlex.join(argv)
    load0 = loadavg()
    try:
        if float(load0) > 0.5:
            log(f"warning: load average {load0} > 0.5: timings will not mean much")
    except ValueError:
        pass
    if a.src:
        with open(a.src, encoding="utf-8") as f:
            sentences = [l.strip() for l in f if 1 <= len(l.split()) <= 30][:1000]
        if not sentences:
            sys.exit(f"no usable lines in {a.src}")
    else:
        sentences = SENTENCES[a.lang]

    # Enough descriptors for the half-open connections and the clients, in the harness only.
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = a.half_open + max(a.levels) + 64
    if nofile[0] != resource.RLIM_INFINITY and nofile[0] < need:
        hard = nofile[1]
        new = need if hard == resource.RLIM_INFINITY else min(need, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))

    port = a.port or free_port()
    tmpdir = None
    if a.log:
        log_path = a.log
    else:
        tmpdir = tempfile.mkdtemp(prefix="serve_load.")
        log_path = os.path.join(tmpdir, "serve.log")
    srv = Server(a, port, log_path, nofile)
    h = None
    t_start = time.monotonic()
    try:
        log(f"starting s2s serve on 127.0.0.1:{port} (log {log_path})")
        health = srv.start()
        h = Harness(a, srv, sentences, a.lang)
        probes = [("start", lambda: h.probe_start(health)),
                  ("hostile input", h.probe_hostile_input),
                  ("load", h.probe_load),
                  ("worst request", h.probe_worst),
                  ("abandoned request", h.probe_abandon),
                  ("half-open connections", h.probe_half_open),
                  ("clients that do not read", h.probe_refuse_read),
                  ("shutdown with a stuck client", h.probe_shutdown_stuck)]
        for name, fn in probes:
            if not srv.alive() and name != "start":
                h.row(name, f"not run: the server exited with status {srv.proc.returncode}")
                continue
            log(f"probe: {name}")
            try:
                fn()
            except Exception as e:  # noqa: BLE001 - reported in the table
                h.row(name, f"harness error: {trunc(f'{type(e).__name__}: {e}', 140)}")
        srv.kill()
        probe_clean_restart(a, port, log_path, nofile, h.rows, h.normal_opts)
    finally:
        srv.kill()
    load1 = loadavg()

    out = [machine_line(load0, load1, a.s2s), "", "```", cmdline, "```", "",
           "| probe | result |", "|---|---|"]
    out += [f"| {cell(probe, 200)} | {cell(result, 400)} |" for probe, result in h.rows]
    out.append("")
    out += [f"- {cell(n, 400)}" for n in h.notes]
    out.append(f"- Sentences: {a.src or 'built-in ' + a.lang} ({len(sentences)}); the server's "
               f"stderr: {log_path}; the harness ran {time.monotonic() - t_start:.0f} s"
               + ("; --quick (short waits and counts: not a measurement)" if a.quick else "")
               + ".")
    text = "\n".join(out) + "\n"
    sys.stdout.write(text)
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


def _terminate(signum, _frame):
    # SIGTERM/SIGHUP end the harness through its `finally` blocks, which kill the server.
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
    except RuntimeError as e:
        log(str(e))
        sys.exit(1)
