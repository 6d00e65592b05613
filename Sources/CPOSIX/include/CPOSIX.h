#ifndef SERIALGPS_CPOSIX_H
#define SERIALGPS_CPOSIX_H
// The C side of the POSIX module: what Swift cannot reach through `import Glibc` because glibc
// declares it only under _GNU_SOURCE (eventfd, accept4, pipe2, pthread_setname_np, gettid,
// strerrorname_np, sigabbrev_np) or because the GNU and XSI versions of a call differ
// (strerror_r). Every function returns what the call returns and leaves errno as the call left
// it; none retries EINTR (the Swift side does, in one place).

#include <pthread.h>
#include <stddef.h>

/// eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK).
int cposix_eventfd(void);

/// timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC | TFD_NONBLOCK): a timer on the clock that
/// counts time suspended (ContinuousClock's on Linux), readable once it has expired.
int cposix_boottime_timer(void);

/// Arms `timer` to expire once at the absolute CLOCK_BOOTTIME time `seconds` + `nanoseconds`
/// (a past one expires at once), or disarms it when `armed` is 0 (timerfd_settime,
/// TFD_TIMER_ABSTIME). Plain numbers: a `struct timespec` here would make this module, not
/// Glibc, the owner of that type for Swift.
int cposix_arm_timer(int timer, int armed, long long seconds, long nanoseconds);

/// accept4(2) with SOCK_NONBLOCK | SOCK_CLOEXEC, so a client socket never leaks into a child.
int cposix_accept(int listener);

/// pipe2(2) with O_CLOEXEC: `descriptors[0]` reads, `descriptors[1]` writes.
int cposix_pipe(int descriptors[2]);

/// Names a thread (at most 15 bytes; shown by `ps -L` and in /proc/self/task/*/comm).
/// Returns 0 or an error number, as pthread_setname_np does.
int cposix_name_thread(pthread_t thread, const char *name);

/// The kernel's id of the calling thread (gettid).
int cposix_current_thread_id(void);

/// The symbolic name of an errno value ("EACCES"), or NULL when unknown.
const char *cposix_errno_name(int number);

/// The C library's message for an errno value ("Permission denied"), written into `buffer`.
void cposix_errno_message(int number, char *buffer, size_t capacity);

/// The abbreviation of a signal's name without "SIG" ("INT"), or NULL when unknown.
const char *cposix_signal_abbreviation(int number);

// MARK: - The signal pipe

/// Sets the descriptor the signal handler writes to (the write end of a non-blocking pipe).
/// Call it before the first cposix_catch_signal.
void cposix_set_signal_pipe(int descriptor);

/// Makes `number` call the package's one signal handler, on whichever thread it lands: the
/// handler writes the signal number as one byte into the signal pipe and does nothing else
/// (write is async-signal-safe; errno is restored). SA_RESTART, so that calls restartable
/// after a handler (read on a tty, write) are not cut short by it.
int cposix_catch_signal(int number);

/// Sets `number` to be ignored (SIG_IGN).
int cposix_ignore_signal(int number);

/// 1 when `number` is ignored now (as a process started by nohup finds SIGHUP), 0 when not,
/// -1 with errno set when the number is not a signal.
int cposix_signal_is_ignored(int number);

// MARK: - Waking a thread out of a blocking call

/// The signal that wakes a thread out of a call with neither a timeout nor a descriptor to
/// poll (TIOCMIWAIT): SIGURG, ignored by default and sent by nothing else the package uses.
int cposix_wake_signal(void);

/// Installs a handler for `number` that does nothing, without SA_RESTART, so that a blocking
/// call interrupted by it returns EINTR. Returns what sigaction returns.
int cposix_install_wake_handler(int number);

/// Unblocks `number` for the calling thread (its mask may have been inherited with every
/// signal blocked). Returns 0 or an error number, as pthread_sigmask does.
int cposix_unblock_signal_in_thread(int number);

/// pthread_kill: sends `number` to `thread`. Returns 0 or an error number.
int cposix_signal_thread(pthread_t thread, int number);

// MARK: - Memory

/// madvise(MADV_DONTNEED) on the executable's own code: every loadable segment of the main
/// program that is executable and not writable (never its relocated or writable data, whose
/// contents would be lost), after MADV_RANDOM (no readahead) and MADV_PAGEOUT (the pages only
/// this process maps leave the page cache), then POSIX_FADV_DONTNEED on the executable. The
/// code stays mapped; the pages leave the process's resident set and are read back, a page at
/// a time, when next run. Returns the bytes advised, or -1 with errno set when madvise refused.
long cposix_release_executable_code(void);

/// GPIO character device, uAPI v2 (linux/gpio.h): asks the open chip `chip` (a
/// /dev/gpiochipN) for line `offset` as an output at `value` (0 or 1), named `consumer`
/// (GPIO_V2_GET_LINE_IOCTL). Returns the line's close-on-exec descriptor, or -1 and errno.
int cposix_gpio_request_output(int chip, unsigned int offset, const char *consumer, int value);

/// Sets the one line of `line` (a descriptor from cposix_gpio_request_output) to `value`
/// (GPIO_V2_LINE_SET_VALUES_IOCTL). Returns 0, or -1 and errno.
int cposix_gpio_set_value(int line, int value);

#endif
