"""The system calls a graded run may make: a seccomp filter built with libseccomp (through ``pyseccomp``, its ctypes
binding on PyPI, which loads the system's ``libseccomp.so.2``).

The filter is an allowlist, as Docker's default profile is (moby's ``profiles/seccomp/default.json``, for a container
given no capability): every call it does not name fails with ``EPERM``. It allows what that profile allows, with
the same conditions (``clone`` without a namespace flag, ``clone3`` answered ``ENOSYS`` so that the C library falls
back to ``clone``, ``socket`` of any family but ``AF_VSOCK``, ``personality`` with the profile's five values), less
what Docker still lets a container do with another process or the kernel's objects: ``ptrace``,
``process_vm_readv`` and ``process_vm_writev`` (Docker allows them on kernels from 4.8) and the ``io_uring`` calls
(whose operations no seccomp filter sees; Docker's newer profiles refuse them too). So a run cannot touch a kernel
keyring (``keyctl``, ``add_key``, ``request_key``), make or enter a namespace (``unshare``, ``setns``, ``clone``
with a ``CLONE_NEW*`` flag), mount anything, load BPF, open performance counters, or use ``userfaultfd``. System
calls of another architecture (32-bit calls on x86-64) kill the process, libseccomp's default.
"""

from __future__ import annotations

import errno

#: Docker's default allowlist (calls allowed to a container without added capabilities, every architecture's names;
#: libseccomp skips the names this machine's architecture does not have), less the io_uring calls.
ALLOWED = """
accept accept4 access adjtimex alarm bind brk capget capset chdir chmod chown chown32 clock_adjtime clock_adjtime64
clock_getres clock_getres_time64 clock_gettime clock_gettime64 clock_nanosleep clock_nanosleep_time64 close
close_range connect copy_file_range creat dup dup2 dup3 epoll_create epoll_create1 epoll_ctl epoll_ctl_old
epoll_pwait epoll_pwait2 epoll_wait epoll_wait_old eventfd eventfd2 execve execveat exit exit_group faccessat
faccessat2 fadvise64 fadvise64_64 fallocate fanotify_mark fchdir fchmod fchmodat fchown fchown32 fchownat fcntl fcntl64
fdatasync fgetxattr flistxattr flock fork fremovexattr fsetxattr fstat fstat64 fstatat64 fstatfs fstatfs64 fsync
ftruncate ftruncate64 futex futex_time64 futex_waitv futimesat getcpu getcwd getdents getdents64 getegid getegid32
geteuid geteuid32 getgid getgid32 getgroups getgroups32 getitimer getpeername getpgid getpgrp getpid getppid
getpriority getrandom getresgid getresgid32 getresuid getresuid32 getrlimit get_robust_list getrusage getsid
getsockname getsockopt get_thread_area gettid gettimeofday getuid getuid32 getxattr inotify_add_watch inotify_init
inotify_init1 inotify_rm_watch io_cancel ioctl io_destroy io_getevents io_pgetevents io_pgetevents_time64 ioprio_get
ioprio_set io_setup io_submit ipc kill landlock_add_rule landlock_create_ruleset landlock_restrict_self lchown
lchown32 lgetxattr link linkat listen listxattr llistxattr _llseek lremovexattr lseek lsetxattr lstat lstat64 madvise
membarrier memfd_create memfd_secret mincore mkdir mkdirat mknod mknodat mlock mlock2 mlockall mmap mmap2 mprotect
mq_getsetattr mq_notify mq_open mq_timedreceive mq_timedreceive_time64 mq_timedsend mq_timedsend_time64 mq_unlink
mremap msgctl msgget msgrcv msgsnd msync munlock munlockall munmap name_to_handle_at nanosleep newfstatat _newselect
open openat openat2 pause pidfd_open pidfd_send_signal pipe pipe2 pkey_alloc pkey_free pkey_mprotect poll ppoll
ppoll_time64 prctl pread64 preadv preadv2 prlimit64 process_mrelease pselect6 pselect6_time64 pwrite64 pwritev
pwritev2 read readahead readlink readlinkat readv recv recvfrom recvmmsg recvmmsg_time64 recvmsg remap_file_pages
removexattr rename renameat renameat2 restart_syscall rmdir rseq rt_sigaction rt_sigpending rt_sigprocmask
rt_sigqueueinfo rt_sigreturn rt_sigsuspend rt_sigtimedwait rt_sigtimedwait_time64 rt_tgsigqueueinfo
sched_getaffinity sched_getattr sched_getparam sched_get_priority_max sched_get_priority_min sched_getscheduler
sched_rr_get_interval sched_rr_get_interval_time64 sched_setaffinity sched_setattr sched_setparam sched_setscheduler
sched_yield seccomp select semctl semget semop semtimedop semtimedop_time64 send sendfile sendfile64 sendmmsg sendmsg
sendto setfsgid setfsgid32 setfsuid setfsuid32 setgid setgid32 setgroups setgroups32 setitimer setpgid setpriority
setregid setregid32 setresgid setresgid32 setresuid setresuid32 setreuid setreuid32 setrlimit set_robust_list setsid
setsockopt set_thread_area set_tid_address setuid setuid32 setxattr shmat shmctl shmdt shmget shutdown sigaltstack
signalfd signalfd4 sigprocmask sigreturn socketcall socketpair splice stat stat64 statfs statfs64 statx symlink
symlinkat sync sync_file_range syncfs sysinfo tee tgkill time timer_create timer_delete timer_getoverrun timer_gettime
timer_gettime64 timer_settime timer_settime64 timerfd_create timerfd_gettime timerfd_gettime64 timerfd_settime
timerfd_settime64 times tkill truncate truncate64 ugetrlimit umask uname unlink unlinkat utime utimensat
utimensat_time64 utimes vfork vmsplice wait4 waitid waitpid write writev arch_prctl modify_ldt
""".split()
#: Refused, although some are in Docker's profile: what a run could use on another process or a kernel object.
REFUSED = ("ptrace", "process_vm_readv", "process_vm_writev", "keyctl", "add_key", "request_key", "unshare", "setns",
           "mount", "umount2", "pivot_root", "chroot", "bpf", "perf_event_open", "userfaultfd", "kcmp", "pidfd_getfd",
           "io_uring_setup", "io_uring_enter", "io_uring_register")
AF_VSOCK = 40
#: The namespace flags of ``clone`` (CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET), Docker's mask.
CLONE_NEW = 0x7E020000
PERSONALITIES = (0x0, 0x8, 0x20000, 0x20008, 0xFFFFFFFF)  # PER_LINUX, UNAME26, ADDR_NO_RANDOMIZE, both; query


def _seccomp():
    import pyseccomp

    return pyseccomp


def build():
    """The filter (a ``pyseccomp.SyscallFilter``), not yet loaded."""
    seccomp = _seccomp()
    arch = seccomp.system_arch()
    flt = seccomp.SyscallFilter(seccomp.ERRNO(errno.EPERM))
    for name in ALLOWED:
        try:
            number = seccomp.resolve_syscall(arch, name)
        except Exception:  # a name this architecture does not have
            continue
        if number >= 0:
            flt.add_rule(seccomp.ALLOW, number)
    flt.add_rule(seccomp.ALLOW, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_NEW, 0))
    flt.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    flt.add_rule(seccomp.ALLOW, "socket", seccomp.Arg(0, seccomp.NE, AF_VSOCK))
    for persona in PERSONALITIES:
        flt.add_rule(seccomp.ALLOW, "personality", seccomp.Arg(0, seccomp.EQ, persona))
    return flt


def load() -> None:
    """Load the filter on this process (and, inherited, on everything it starts); sets ``no_new_privs``."""
    build().load()


def missing() -> str | None:
    """Why this machine cannot build the filter, in words (None when it can)."""
    try:
        build()
    except Exception as error:  # no pyseccomp, no libseccomp.so.2, or a libseccomp that refuses a rule
        return (f"Grading filters each submission's system calls with libseccomp, which failed here "
                f"({type(error).__name__}: {str(error)[:200]}): install the Debian/Ubuntu package libseccomp2 and the "
                "pinned requirements (pyseccomp).")
    return None


def description() -> str:
    """What the filter allows and refuses, in one sentence."""
    return ("a seccomp allowlist (Docker's default profile for a container without capabilities, less ptrace, "
            "process_vm_readv/writev and io_uring): keyrings (keyctl, add_key, request_key), namespaces (unshare, "
            "setns, clone with a namespace flag), mount, bpf, perf_event_open and userfaultfd fail with EPERM")
