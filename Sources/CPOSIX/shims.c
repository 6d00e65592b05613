#define _GNU_SOURCE
#include "CPOSIX.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/gpio.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

int cposix_eventfd(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

int cposix_boottime_timer(void) {
  return timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC | TFD_NONBLOCK);
}

int cposix_arm_timer(int timer, int armed, long long seconds, long nanoseconds) {
  struct itimerspec spec = {0};
  if (armed) {
    spec.it_value.tv_sec = (time_t)seconds;
    spec.it_value.tv_nsec = nanoseconds;
    // All zero would disarm: the clock's very first nanosecond is long past anyway.
    if (seconds == 0 && nanoseconds == 0) spec.it_value.tv_nsec = 1;
  }
  return timerfd_settime(timer, TFD_TIMER_ABSTIME, &spec, NULL);
}

int cposix_accept(int listener) {
  return accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int cposix_pipe(int descriptors[2]) { return pipe2(descriptors, O_CLOEXEC); }

int cposix_name_thread(pthread_t thread, const char *name) {
  return pthread_setname_np(thread, name);
}

int cposix_current_thread_id(void) { return (int)syscall(SYS_gettid); }

const char *cposix_errno_name(int number) { return strerrorname_np(number); }

void cposix_errno_message(int number, char *buffer, size_t capacity) {
  if (capacity == 0) return;
  // The GNU strerror_r may return a static string instead of filling the buffer.
  const char *message = strerror_r(number, buffer, capacity);
  if (message != buffer) {
    strncpy(buffer, message, capacity - 1);
    buffer[capacity - 1] = '\0';
  }
}

const char *cposix_signal_abbreviation(int number) { return sigabbrev_np(number); }

// MARK: - The signal pipe

static volatile sig_atomic_t signal_pipe = -1;

void cposix_set_signal_pipe(int descriptor) { signal_pipe = descriptor; }

static void signal_to_pipe(int number) {
  int saved = errno;
  unsigned char byte = (unsigned char)number;
  // Nothing to do on failure: a full pipe means thousands of signals are still unread.
  ssize_t written = write(signal_pipe, &byte, 1);
  (void)written;
  errno = saved;
}

int cposix_catch_signal(int number) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = signal_to_pipe;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  return sigaction(number, &action, NULL);
}

int cposix_ignore_signal(int number) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = SIG_IGN;
  sigemptyset(&action.sa_mask);
  return sigaction(number, &action, NULL);
}

int cposix_signal_is_ignored(int number) {
  struct sigaction current;
  if (sigaction(number, NULL, &current) != 0) return -1;
  return current.sa_handler == SIG_IGN;
}

// MARK: - Waking a thread out of a blocking call

int cposix_wake_signal(void) { return SIGURG; }

static void wake_handler(int number) { (void)number; }

int cposix_install_wake_handler(int number) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = wake_handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: the interrupted call returns EINTR
  return sigaction(number, &action, NULL);
}

int cposix_unblock_signal_in_thread(int number) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, number);
  return pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

int cposix_signal_thread(pthread_t thread, int number) { return pthread_kill(thread, number); }

// MARK: - Memory

struct cposix_released {
  long bytes;
  int error;
};

// dl_iterate_phdr calls this first for the main program; it stops there (returns 1).
static int cposix_release_code_of(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  struct cposix_released *released = data;
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  for (ElfW(Half) index = 0; index < info->dlpi_phnum; index++) {
    const ElfW(Phdr) *header = &info->dlpi_phdr[index];
    if (header->p_type != PT_LOAD || !(header->p_flags & PF_X) || (header->p_flags & PF_W)) {
      continue;
    }
    uintptr_t start = (info->dlpi_addr + header->p_vaddr) & ~(page - 1);
    uintptr_t end = (info->dlpi_addr + header->p_vaddr + header->p_memsz + page - 1) & ~(page - 1);
    // No readahead on the code from now on (a fault reads its own page only), and the pages
    // only this process maps leave the page cache as well as its resident set: the kernel's
    // fault-around maps the cached pages around each fault, so code left cached would come
    // back 64 KB at a time with the first page that runs near it. Both are advice: a kernel
    // without MADV_PAGEOUT (before 5.4) releases as MADV_DONTNEED alone does.
    (void)madvise((void *)start, end - start, MADV_RANDOM);
    (void)madvise((void *)start, end - start, MADV_PAGEOUT);
    if (madvise((void *)start, end - start, MADV_DONTNEED) != 0) {
      released->error = errno;
      return 1;
    }
    released->bytes += (long)(end - start);
  }
  return 1;
}

long cposix_release_executable_code(void) {
  struct cposix_released released = {0, 0};
  dl_iterate_phdr(cposix_release_code_of, &released);
  // What no process maps any more of the executable leaves the page cache too.
  int executable = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  if (executable >= 0) {
    (void)posix_fadvise(executable, 0, 0, POSIX_FADV_DONTNEED);
    close(executable);
  }
  if (released.error != 0) {
    errno = released.error;
    return -1;
  }
  return released.bytes;
}

int cposix_gpio_request_output(int chip, unsigned int offset, const char *consumer, int value) {
  struct gpio_v2_line_request request;
  memset(&request, 0, sizeof request);
  request.offsets[0] = offset;
  request.num_lines = 1;
  strncpy(request.consumer, consumer, sizeof request.consumer - 1);
  request.config.flags = GPIO_V2_LINE_FLAG_OUTPUT;
  request.config.num_attrs = 1;
  request.config.attrs[0].attr.id = GPIO_V2_LINE_ATTR_ID_OUTPUT_VALUES;
  request.config.attrs[0].attr.values = value ? 1 : 0;
  request.config.attrs[0].mask = 1;
  if (ioctl(chip, GPIO_V2_GET_LINE_IOCTL, &request) == -1) return -1;
  return request.fd;
}

int cposix_gpio_set_value(int line, int value) {
  struct gpio_v2_line_values values;
  memset(&values, 0, sizeof values);
  values.mask = 1;
  values.bits = value ? 1 : 0;
  return ioctl(line, GPIO_V2_LINE_SET_VALUES_IOCTL, &values);
}
