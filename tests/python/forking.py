"""A test's check run in a forked child: the fork-safety tests' common part."""
import os
import signal


def child_code(body) -> int:
    """Forks; the child runs body(), which returns a small code (0: passed), and leaves with
    os._exit, never returning into pytest; an exception in it is code 13, and SIGALRM ends a
    child that hangs after 60 s (then the test fails instead of hanging). Returns the code,
    after checking that the child exited."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        signal.alarm(60)
        try:
            code = body()
        except BaseException:
            code = 13
        os.write(write, bytes([code]))
        os._exit(0)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    code = os.read(read, 1)
    os.close(read)
    assert status == 0 and len(code) == 1, (status, code)
    return code[0]
