"""A rank that dies or hangs mid-generation ends the job with a clear error
within 10 s (tests/dist/fault_demo.cpp under mpirun, 2 ranks on loopback).

usage: fault_test.py MPIRUN-ARGS... -- DEMO-BINARY
"""
import os
import subprocess
import sys
import threading
import time


def run(command, mode):
    env = dict(os.environ, LUMEN_DIST_TIMEOUT="3")
    start = time.monotonic()
    p = subprocess.Popen(command + [mode], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines, failed_at = [], [None]

    def read():
        for line in p.stdout:
            lines.append(line)
            if "dying" in line or "hanging" in line:
                failed_at[0] = time.monotonic()

    reader = threading.Thread(target=read)
    reader.start()
    try:
        p.wait(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        sys.exit(f"{mode}: the job did not end within 120 s:\n" + "".join(lines))
    ended = time.monotonic()
    reader.join()
    out = "".join(lines)
    if failed_at[0] is None:
        sys.exit(f"{mode}: rank 1 never failed (start-up took {ended - start:.1f} s):\n{out}")
    took = ended - failed_at[0]
    print(f"{mode}: the job ended {took:.1f} s after rank 1 failed, exit code {p.returncode}")
    if p.returncode == 0:
        sys.exit(f"{mode}: the job exited 0 after a rank failed:\n{out}")
    if took > 10:
        sys.exit(f"{mode}: the job took {took:.1f} s (> 10 s) to end:\n{out}")
    if "finished without noticing" in out:
        sys.exit(f"{mode}: rank 0 finished as if nothing happened:\n{out}")
    return out


def main():
    split = sys.argv.index("--")
    command = sys.argv[1:split] + [sys.argv[split + 1]]
    killed = run(command, "kill")
    if "a peer rank died" not in killed and "exited on signal 9" not in killed:
        sys.exit("kill: no clear error (neither lumen's nor mpirun's) in:\n" + killed)
    hung = run(command, "hang")
    if "waited 3 s" not in hung or "a peer rank died, hangs" not in hung:
        sys.exit("hang: rank 0 did not report the timeout:\n" + hung)
    print("both failures ended the job with a clear error")


if __name__ == "__main__":
    main()
