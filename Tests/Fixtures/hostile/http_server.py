#!/usr/bin/env python3
"""A hostile HTTP server on loopback for iapcheck's HTTP client tests.

Usage: http_server.py MODE  — binds 127.0.0.1 on a free port, prints the port on stdout, answers one connection
after another in MODE until killed or 60 s have passed:

  ok-chunked     a valid chunked response (must be read)
  ok-close       a response without length, ended by closing the connection (must be read)
  ok-http10      an HTTP/1.0 response with neither a length nor Connection: close, ended by closing (must be read)
  oversized      Content-Length of 100 MB, then streams bytes as fast as it can
  endless-chunk  an endless chunked body of 1 KiB chunks
  drip           a valid response, one byte per second
  huge-length    Content-Length: 99999999999999999999999999 (more digits than any integer holds)
  endless-head   header lines forever, never the blank line
  garbage        binary bytes, not HTTP
  ok-continue    an interim 100 Continue, a pause, then a valid response (must be read, the 100 skipped)
  ok-hints       a 103 Early Hints with headers and a valid response in one send (must be read)

A MODE ending in -v6 (ok-chunked-v6) listens on ::1 alone, as a server told to listen on "localhost" may.
"""
import socket
import sys
import threading
import time

MODE = sys.argv[1].removesuffix("-v6")
IPV6 = sys.argv[1].endswith("-v6")
BODY = b'{"ok":true}'


def serve(conn):
    try:
        conn.settimeout(30)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return
            data += chunk
        if MODE == "ok-chunked":
            conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                         b"4\r\n{\"ok\r\n7;ext=1\r\n\":true}\r\n0\r\nX-Trailer: 1\r\n\r\n")
        elif MODE == "ok-close":
            conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + BODY)
            conn.close()
        elif MODE == "ok-http10":
            conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + BODY)
            conn.close()
        elif MODE == "oversized":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\n")
            block = b"x" * 65536
            while True:
                conn.sendall(block)
        elif MODE == "endless-chunk":
            conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            block = b"400\r\n" + b"y" * 1024 + b"\r\n"
            while True:
                conn.sendall(block)
        elif MODE == "drip":
            for b in b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n" + BODY:
                conn.sendall(bytes([b]))
                time.sleep(1)
        elif MODE == "huge-length":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999999\r\n\r\n" + BODY)
            time.sleep(30)
        elif MODE == "endless-head":
            conn.sendall(b"HTTP/1.1 200 OK\r\n")
            while True:
                conn.sendall(b"X-Filler: " + b"z" * 1000 + b"\r\n")
        elif MODE == "ok-continue":
            conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            time.sleep(0.2)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n" + BODY)
        elif MODE == "ok-hints":
            conn.sendall(b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
                         b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n" + BODY)
        elif MODE == "garbage":
            conn.sendall(bytes(range(256)) * 4 + b"\r\n\r\n")
            time.sleep(30)
    except OSError:
        pass
    finally:
        try:
            conn.close()
        except OSError:
            pass


def main():
    s = socket.socket(socket.AF_INET6 if IPV6 else socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("::1", 0) if IPV6 else ("127.0.0.1", 0))
    s.listen(8)
    print(s.getsockname()[1], flush=True)
    s.settimeout(1)
    end = time.time() + 60
    while time.time() < end:
        try:
            conn, _ = s.accept()
        except socket.timeout:
            continue
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
