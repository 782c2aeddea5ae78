/* A diagnostic for the suite, not built by the install: who closes a descriptor libzmq made?
 *
 * A test process that dies with "Fatal Python error: Aborted" and no Python thread marked
 * current most often met a stray close: a number closed twice, the second time after libzmq
 * had taken it for an eventfd or a socket. libzmq aborts later, elsewhere. Preloaded, this
 * library notes which descriptors libzmq made (socket, accept, eventfd, epoll, pipe,
 * socketpair, dup called from libzmq) and stops the process at the stray close itself: a
 * close() or dup2() of such a number from outside libzmq, or, in a forked child, a read or
 * write of one of its parent's (a shared eventfd). It writes what it saw and a C backtrace
 * to /tmp/fdshim/log.PID (child.PID for a child), then raises SIGABRT, so that Python's
 * faulthandler prints every thread's stack with the closing one marked current.
 *
 *     mkdir -p /tmp/fdshim && cc -O1 -fPIC -shared -o /tmp/fdshim/fdshim.so \
 *         tests/fd_owner_shim.c -ldl -lpthread
 *     LD_PRELOAD=/tmp/fdshim/fdshim.so .venv/bin/python -m pytest --capture=sys
 *
 * (--capture=sys: pytest's fd capture would lose the message with the dead process.) On
 * 2026-11-30 it caught, twice in seven runs, a close of libzmq's eventfd through a worker
 * channel's socket object (the front door closing a channel whose number something had
 * closed under it, libzmq's since); one stray closer of such numbers was a test's dup2
 * (mended), and the other, caught by it at last, a test's GPUWB_LISTEN_FD left in the test
 * process's environment, which the next pool's listener.py took and closed (mended too:
 * docs/architecture.md, "Contexts and descriptors").
 *
 * It also notes (without stopping) a close() or dup2() of a Python socket's descriptor (one
 * the socket module made) from anywhere but the socket module: the first, stray close of a
 * number whose owner closes it again later. Where Python's faulthandler is registered for
 * SIGUSR1 (faulthandler.register(signal.SIGUSR1, all_threads=True), in a local conftest
 * hook while hunting) it raises SIGUSR1 there, which prints every thread's stack and goes
 * on; the notes go to /tmp/fdshim/sock.PID. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <pthread.h>

#define MAXFD 65536
static unsigned char owner[MAXFD];   /* 0 none/unknown, 1 libzmq, 2 other */
static unsigned char inherited[MAXFD];   /* in a forked child: libzmq's fds of the parent */
static volatile pid_t mypid;

static int from_zmq(void *ra) {
    Dl_info info;
    if (dladdr(ra, &info) && info.dli_fname && strstr(info.dli_fname, "libzmq")) return 1;
    return 0;
}
static int from_socketmodule(void *ra) {
    Dl_info info;
    return dladdr(ra, &info) && info.dli_fname && strstr(info.dli_fname, "_socket.cpython") != NULL;
}
/* One line to /tmp/fdshim/LOG.PID and stderr, with a C backtrace in the log: *what* was done
 * to *fd* (as /proc names it) by the library at return address *ra*, *whose* the fd was. */
static void note(const char *log, const char *what, int fd, const char *whose, void *ra) {
    char link[256] = "", path[64], buf[512], logp[64];
    int pid = (int)syscall(SYS_getpid);
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, link, sizeof link - 1); if (n > 0) link[n] = 0;
    Dl_info info; const char *lib = (dladdr(ra, &info) && info.dli_fname) ? info.dli_fname : "?";
    int len = snprintf(buf, sizeof buf, "\nFDSHIM %s pid %d tid %ld: %s of fd %d (%s), %s, by %s\n",
                       log, pid, (long)syscall(SYS_gettid), what, fd, link, whose, lib);
    snprintf(logp, sizeof logp, "/tmp/fdshim/%s.%d", log, pid);
    FILE *f = fopen(logp, "a");
    if (f) { fputs(buf, f); fflush(f); void *bt[64]; int k = backtrace(bt, 64); backtrace_symbols_fd(bt, k, fileno(f)); fclose(f); }
    write(2, buf, len);
}
static void note_socket_close(const char *what, int fd, void *ra) {
    note("sock", what, fd, "a Python socket's", ra);
    struct sigaction now;
    if (sigaction(SIGUSR1, NULL, &now) == 0 && now.sa_handler != SIG_DFL && now.sa_handler != SIG_IGN)
        raise(SIGUSR1);   /* (Python's faulthandler registered there: every thread's stack) */
}
static int in_me(void) { return (pid_t)syscall(SYS_getpid) == mypid; }
static void child(void) { for (int i = 0; i < MAXFD; i++) inherited[i] = owner[i] == 1; memset(owner, 0, sizeof owner); mypid = (pid_t)syscall(SYS_getpid); }
__attribute__((constructor)) static void init(void) {
    mypid = (pid_t)syscall(SYS_getpid);
    pthread_atfork(NULL, NULL, child);
}
static void mark(int fd, void *ra) { if (fd >= 0 && fd < MAXFD && in_me()) owner[fd] = from_zmq(ra) ? 1 : (from_socketmodule(ra) ? 3 : 2); }

static void report(const char *what, int fd, void *ra) {
    note("log", what, fd, "libzmq's", ra);
    if (getenv("FDSHIM_NOABORT") == NULL) raise(SIGABRT);
}

#define REAL(name, type) static __typeof__(&name) real_##name; if (!real_##name) real_##name = (__typeof__(&name))dlsym(RTLD_NEXT, #name)

int close(int fd) {
    REAL(close, int (*)(int));
    void *ra = __builtin_return_address(0);
    if (fd >= 0 && fd < MAXFD && in_me()) {
        int z = from_zmq(ra);
        if (owner[fd] == 1 && !z) report("close", fd, ra);
        if (owner[fd] == 3 && !from_socketmodule(ra)) note_socket_close("close", fd, ra);
        owner[fd] = 0; inherited[fd] = 0;
    }
    return real_close(fd);
}
int dup2(int old, int new) {
    REAL(dup2, int (*)(int, int));
    void *ra = __builtin_return_address(0);
    if (new >= 0 && new < MAXFD && in_me() && owner[new] == 1 && !from_zmq(ra)) report("dup2 onto", new, ra);
    if (new >= 0 && new < MAXFD && in_me() && owner[new] == 3 && !from_socketmodule(ra)) note_socket_close("dup2 onto", new, ra);
    int r = real_dup2(old, new); mark(r, ra); return r;
}
int dup3(int old, int new, int flags) {
    REAL(dup3, int (*)(int, int, int));
    void *ra = __builtin_return_address(0);
    if (new >= 0 && new < MAXFD && in_me() && owner[new] == 1 && !from_zmq(ra)) report("dup3 onto", new, ra);
    int r = real_dup3(old, new, flags); mark(r, ra); return r;
}
int dup(int old) { REAL(dup, int (*)(int)); int r = real_dup(old); mark(r, __builtin_return_address(0)); return r; }
int socket(int d, int t, int p) { REAL(socket, int (*)(int, int, int)); int r = real_socket(d, t, p); mark(r, __builtin_return_address(0)); return r; }
int accept(int s, struct sockaddr *a, socklen_t *l) { REAL(accept, int (*)(int, struct sockaddr *, socklen_t *)); int r = real_accept(s, a, l); mark(r, __builtin_return_address(0)); return r; }
int accept4(int s, struct sockaddr *a, socklen_t *l, int f) { REAL(accept4, int (*)(int, struct sockaddr *, socklen_t *, int)); int r = real_accept4(s, a, l, f); mark(r, __builtin_return_address(0)); return r; }
int eventfd(unsigned int v, int f) { REAL(eventfd, int (*)(unsigned int, int)); int r = real_eventfd(v, f); mark(r, __builtin_return_address(0)); return r; }
int epoll_create(int s) { REAL(epoll_create, int (*)(int)); int r = real_epoll_create(s); mark(r, __builtin_return_address(0)); return r; }
int epoll_create1(int f) { REAL(epoll_create1, int (*)(int)); int r = real_epoll_create1(f); mark(r, __builtin_return_address(0)); return r; }
int socketpair(int d, int t, int p, int sv[2]) { REAL(socketpair, int (*)(int, int, int, int *)); int r = real_socketpair(d, t, p, sv); if (!r) { mark(sv[0], __builtin_return_address(0)); mark(sv[1], __builtin_return_address(0)); } return r; }
int pipe(int fds[2]) { REAL(pipe, int (*)(int *)); int r = real_pipe(fds); if (!r) { mark(fds[0], __builtin_return_address(0)); mark(fds[1], __builtin_return_address(0)); } return r; }
int pipe2(int fds[2], int f) { REAL(pipe2, int (*)(int *, int)); int r = real_pipe2(fds, f); if (!r) { mark(fds[0], __builtin_return_address(0)); mark(fds[1], __builtin_return_address(0)); } return r; }

/* a forked child that signals or drains one of its parent's libzmq descriptors (shared
 * eventfds: the parent then finds a signal with no command, or loses one, and aborts) */
static void child_use(const char *what, int fd, void *ra) {
    note("child", what, fd, "its parent's libzmq's", ra);
    raise(SIGABRT);
}
ssize_t write(int fd, const void *b, size_t n) {
    REAL(write, ssize_t (*)(int, const void *, size_t));
    if (fd >= 0 && fd < MAXFD && inherited[fd] && in_me()) child_use("write", fd, __builtin_return_address(0));
    return real_write(fd, b, n);
}
ssize_t read(int fd, void *b, size_t n) {
    REAL(read, ssize_t (*)(int, void *, size_t));
    if (fd >= 0 && fd < MAXFD && inherited[fd] && in_me()) child_use("read", fd, __builtin_return_address(0));
    return real_read(fd, b, n);
}
