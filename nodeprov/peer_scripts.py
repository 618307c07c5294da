"""The node side of peer distribution: two standalone scripts run with the node's python3.

    python3 -c SERVE DIR ADDRESS LIFETIME IDLE   # prints "PORT PID", then serves detached
    python3 -c FETCH URL DEST SECONDS NAME SHA256 [NAME SHA256 ...]

SERVE hard-links DIR's wheels into a private folder beside it (so the seed may remove DIR once
it has installed) and serves that folder read-only over HTTP on ADDRESS, port 0: the kernel
picks a port from the node's ephemeral range, which the firewall task opens to the node subnet
only (and before that task, ufw is off). The server detaches, and stops (removing its folder)
on SIGTERM, after LIFETIME seconds, or after IDLE seconds with no transfer: nothing stays
listening even if this machine dies mid-run.

FETCH downloads each NAME from URL (stdlib urllib only) into DEST through a temporary file,
and keeps it only when its sha256 is the one given: the seed is not trusted, nor is its pace
(it gives up after SECONDS in all). Exit 1 names the first file that failed.
"""

from __future__ import annotations

SERVE = r"""import functools, http.server, os, shutil, signal, socket, sys, tempfile
import threading, time
source, address = sys.argv[1], sys.argv[2]
lifetime, idle = float(sys.argv[3]), float(sys.argv[4])
served = tempfile.mkdtemp(prefix=".serve-", dir=os.path.dirname(source))
for name in os.listdir(source):
    path = os.path.join(source, name)
    if name.startswith(".") or not os.path.isfile(path):
        continue
    try:
        os.link(path, os.path.join(served, name))
    except OSError:
        shutil.copyfile(path, os.path.join(served, name))
state = {"active": 0, "last": time.monotonic()}
lock = threading.Lock()

class Handler(http.server.SimpleHTTPRequestHandler):
    def handle(self):
        with lock:
            state["active"] += 1
        try:
            super().handle()
        finally:
            with lock:
                state["active"] -= 1
                state["last"] = time.monotonic()

    def copyfile(self, source, outputfile):
        self.connection.sendfile(source)  # the kernel copies: the seed serves many at once

    def log_message(self, *args):
        pass

class Server(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6 if ":" in address else socket.AF_INET
    daemon_threads = True

try:
    server = Server((address, 0), functools.partial(Handler, directory=served))
except OSError:
    shutil.rmtree(served, ignore_errors=True)
    raise
child = os.fork()
if child:
    print(server.server_address[1], child, flush=True)
    os._exit(0)
os.setsid()
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
threading.Thread(target=server.serve_forever, daemon=True).start()
started = time.monotonic()
while not stop.wait(1):
    now = time.monotonic()
    with lock:
        quiet = state["active"] == 0 and now - state["last"] > idle
    if quiet or now - started > lifetime:
        break
server.shutdown()
server.server_close()
shutil.rmtree(served, ignore_errors=True)
"""

FETCH = r"""import hashlib, os, sys, time, urllib.parse, urllib.request
base, dest, deadline = sys.argv[1], sys.argv[2], time.monotonic() + float(sys.argv[3])
pairs = sys.argv[4:]
for name, expected in zip(pairs[0::2], pairs[1::2]):
    part = os.path.join(dest, "." + name + ".part")
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(base + urllib.parse.quote(name), timeout=60) as response, \
                open(part, "wb") as out:
            while True:
                chunk = response.read1(1 << 20)
                if not chunk:
                    break
                if time.monotonic() > deadline:
                    sys.exit(f"{name}: too slow, gave up after {sys.argv[3]} seconds")
                digest.update(chunk)
                out.write(chunk)
        if digest.hexdigest() != expected:
            sys.exit(f"{name}: sha256 {digest.hexdigest()} from the seed, expected {expected}")
        os.replace(part, os.path.join(dest, name))
    except OSError as error:
        sys.exit(f"{name}: {error}")
    finally:
        if os.path.exists(part):
            os.unlink(part)
"""
