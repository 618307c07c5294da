"""The node side of peer distribution: standalone scripts run with the node's python3.

    python3 -c SERVE DIR ADDRESS LIFETIME IDLE MARK PATH  # prints "PORT PID", serves detached
    python3 -c FETCH URL DEST SECONDS NAME SHA256 SIZE [NAME SHA256 SIZE ...]

SERVE opens DIR's wheels (``*.whl``, nothing else: no log, no list) and serves those open files
read-only over HTTP on ADDRESS, port 0, under ``/PATH/`` only, PATH being a random token of the
run: a host that can reach the port but was not told the token gets 404 for everything (the
kernel picks the port from the node's ephemeral range, which the firewall task opens to the node
subnet only; before that task, ufw may be off). Having opened them, it detaches and drops root
for ``nobody`` (it exits rather than serve as root), and only then says it serves: the server
reads no path after that, so the seed may remove DIR once it has installed. It stops on
SIGTERM, after LIFETIME seconds, or after IDLE seconds with no transfer: nothing stays
listening even if this machine dies mid-run. MARK only marks its command line, so the stop step
can tell it from a process that took its pid after it ended by itself.

FETCH downloads each NAME from URL (stdlib urllib only) into DEST through a temporary file,
stops at SIZE bytes (it writes no more than that, whatever the source sends), and keeps a file
only when its sha256 is the one given: the source is not trusted, nor is its pace (it gives up
after SECONDS in all). Exit 1 names the first file that failed.
"""

from __future__ import annotations

SERVE = r"""import http.server, os, pwd, signal, socket, sys, threading, time, urllib.parse
source, address, prefix = sys.argv[1], sys.argv[2], "/" + sys.argv[6] + "/"
lifetime, idle = float(sys.argv[3]), float(sys.argv[4])
files = {name: os.open(os.path.join(source, name), os.O_RDONLY | os.O_NOFOLLOW)
         for name in os.listdir(source) if name.endswith(".whl") and not name.startswith(".")
         and os.path.isfile(os.path.join(source, name))}
state = {"active": 0, "last": time.monotonic()}
lock = threading.Lock()

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with lock:
            state["active"] += 1
        try:
            name = self.path[len(prefix):] if self.path.startswith(prefix) else ""
            fd = files.get(urllib.parse.unquote(name))
            if fd is None:
                self.send_error(404)
                return
            size = os.fstat(fd).st_size
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(size))
            self.end_headers()
            sent = 0
            while sent < size:  # the kernel copies, from an offset: requests share the file
                done = os.sendfile(self.connection.fileno(), fd, sent, size - sent)
                if not done:
                    break
                sent += done
        finally:
            with lock:
                state["active"] -= 1
                state["last"] = time.monotonic()

    def log_message(self, *args):
        pass

class Server(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6 if ":" in address else socket.AF_INET
    daemon_threads = True

server = Server((address, 0), Handler)
ready, told = os.pipe()
child = os.fork()
if child:
    os.close(told)
    if os.read(ready, 1) != b"y":  # the child could not drop root: nothing serves
        os._exit(1)
    print(server.server_address[1], child, flush=True)
    os._exit(0)
os.close(ready)
os.setsid()
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
if os.geteuid() == 0:
    try:
        nobody = pwd.getpwnam("nobody")
        os.setgroups([])
        os.setgid(nobody.pw_gid)
        os.setuid(nobody.pw_uid)
    except (KeyError, OSError):
        os._exit(1)  # never serve as root
os.write(told, b"y")
os.close(told)
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
"""

FETCH = r"""import hashlib, os, sys, time, urllib.parse, urllib.request
base, dest, deadline = sys.argv[1], sys.argv[2], time.monotonic() + float(sys.argv[3])
rest = sys.argv[4:]
for name, expected, size in zip(rest[0::3], rest[1::3], map(int, rest[2::3])):
    part = os.path.join(dest, "." + name + ".part")
    digest, got = hashlib.sha256(), 0
    try:
        # a new file, never one (or a link) the owner of a login user's folder put there first
        created = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with urllib.request.urlopen(base + urllib.parse.quote(name), timeout=60) as response, \
                os.fdopen(created, "wb") as out:
            while True:
                chunk = response.read1(min(1 << 20, size + 1 - got))
                if not chunk:
                    break
                got += len(chunk)
                if got > size:
                    sys.exit(f"{name}: the source sent more than {size} bytes")
                if time.monotonic() > deadline:
                    sys.exit(f"{name}: too slow, gave up after {sys.argv[3]} seconds")
                digest.update(chunk)
                out.write(chunk)
        if digest.hexdigest() != expected:
            sys.exit(f"{name}: sha256 {digest.hexdigest()} from the source, expected {expected}")
        os.replace(part, os.path.join(dest, name))
    except OSError as error:
        sys.exit(f"{name}: {error}")
    finally:
        if os.path.exists(part):
            os.unlink(part)
"""
