"""The node side of peer distribution: standalone scripts run with the node's python3.

    python3 -c SERVE DIR ADDRESS LIFETIME IDLE MARK PATH NAME SHA256 [NAME SHA256 ...]
    python3 -c FETCH URL DEST SECONDS NAME SHA256 SIZE [NAME SHA256 SIZE ...]

SERVE opens each NAME in DIR once (nothing else: no log, no list), refuses it unless it is a
regular file of one link whose sha256, read from that open file, is the SHA256 given (this
machine's), and serves those open files read-only, each as long as it was when hashed; so a
file it serves is the one it hashed, never another file of the node that its folder's owner
hard-linked there (root's, where fs.protected_hardlinks=0): exit 1 names the file refused and
why, before anything listens. It prints "PORT PID" and serves over HTTP on ADDRESS, port 0,
under ``/PATH/`` only, PATH being a random token of the
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

SERVE = r"""import errno, hashlib, http.server, os, pwd, signal, socket, stat, sys, threading, time
import urllib.parse
source, address, prefix = sys.argv[1], sys.argv[2], "/" + sys.argv[6] + "/"
lifetime, idle = float(sys.argv[3]), float(sys.argv[4])

def checked(name, expected):
    if "/" in name or name.startswith("."):
        sys.exit(f"{name}: not served: not a file name of the folder")
    try:  # O_NONBLOCK: a FIFO put there cannot hold the open
        fd = os.open(os.path.join(source, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        why = "a symbolic link" if error.errno == errno.ELOOP else error.strerror
        sys.exit(f"{name}: not served: {why}")
    found = os.fstat(fd)
    if not stat.S_ISREG(found.st_mode):
        sys.exit(f"{name}: not served: not a regular file")
    if found.st_nlink != 1:
        sys.exit(f"{name}: not served: a hard link ({found.st_nlink} names): it may be another "
                 "file of this node, which its peers must not be sent")
    digest, size = hashlib.sha256(), 0
    while size < found.st_size and (chunk := os.pread(fd, min(1 << 20, found.st_size - size),
                                                      size)):
        digest.update(chunk)
        size += len(chunk)
    if digest.hexdigest() != expected:
        sys.exit(f"{name}: not served: its sha256 {digest.hexdigest()[:16]}... is not this "
                 f"machine's {expected[:16]}...")
    return fd, size

files = {name: checked(name, expected) for name, expected in zip(sys.argv[7::2], sys.argv[8::2])}
state = {"active": 0, "last": time.monotonic()}
lock = threading.Lock()

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with lock:
            state["active"] += 1
        try:
            name = self.path[len(prefix):] if self.path.startswith(prefix) else ""
            fd, size = files.get(urllib.parse.unquote(name), (None, 0))
            if fd is None:
                self.send_error(404)
                return
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
