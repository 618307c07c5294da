"""A DNS server for one node of the testbed, standard library only: answers A queries for the
names it is given (RFC 1035 4.1), every other query with no answer (NOERROR, NODATA for AAAA of
a known name; NXDOMAIN otherwise). Run inside the node's namespaces, where resolv.conf names
127.0.0.1 (testbed/boot.py):

    python3 -c "$(cat dns_stand_in.py)" mirror=10.9.9.9
"""

from __future__ import annotations

import os
import socket
import struct
import sys

A, IN = 1, 1


def question(query: bytes) -> tuple[str, int, int]:
    """(name, end of the question, query type) of a query with one question."""
    labels, at = [], 12
    while query[at]:
        labels.append(query[at + 1:at + 1 + query[at]].decode("ascii").lower())
        at += 1 + query[at]
    qtype = struct.unpack("!H", query[at + 1:at + 3])[0]
    return ".".join(labels), at + 5, qtype


def answer(query: bytes, names: dict[str, str]) -> bytes:
    name, end, qtype = question(query)
    address = names.get(name)
    rcode = 0 if address else 3
    records = b""
    if address and qtype == A:
        records = (b"\xc0\x0c" + struct.pack("!HHIH", A, IN, 60, 4)
                   + socket.inet_aton(address))
    header = struct.pack("!HHHHHH", struct.unpack("!H", query[:2])[0], 0x8180 | rcode, 1,
                         1 if records else 0, 0, 0)
    return header + query[12:end] + records


def main(argv: list[str]) -> None:
    names = dict(pair.split("=", 1) for pair in argv)
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind(("127.0.0.1", 53))
    print(f"ready {os.getpid()}", flush=True)  # its pid in the node, to stop it there
    while True:
        query, client = server.recvfrom(512)
        server.sendto(answer(query, names), client)


if __name__ == "__main__":
    main(sys.argv[1:])
