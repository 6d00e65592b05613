#define _GNU_SOURCE
#include "CSerialShims.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <pty.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

// MARK: - ioctl

int cserial_set_exclusive(int fd) { return ioctl(fd, TIOCEXCL); }

int cserial_get_exclusive(int fd, int *exclusive) { return ioctl(fd, TIOCGEXCL, exclusive); }

int cserial_clear_exclusive(int fd) { return ioctl(fd, TIOCNXCL); }

int cserial_modem_lines_raise(int fd, int lines) { return ioctl(fd, TIOCMBIS, &lines); }

int cserial_modem_lines_lower(int fd, int lines) { return ioctl(fd, TIOCMBIC, &lines); }

int cserial_modem_lines_get(int fd, int *lines) { return ioctl(fd, TIOCMGET, lines); }

int cserial_input_queued(int fd, int *count) { return ioctl(fd, FIONREAD, count); }

const int CSERIAL_MODEM_LINE_DTR = TIOCM_DTR;
const int CSERIAL_MODEM_LINE_RTS = TIOCM_RTS;

// MARK: - termios

static const struct {
  long rate;
  speed_t speed;
} speeds[] = {
    {50, B50},         {75, B75},         {110, B110},       {134, B134},
    {150, B150},       {200, B200},       {300, B300},       {600, B600},
    {1200, B1200},     {1800, B1800},     {2400, B2400},     {4800, B4800},
    {9600, B9600},     {19200, B19200},   {38400, B38400},   {57600, B57600},
    {115200, B115200}, {230400, B230400}, {460800, B460800}, {500000, B500000},
    {576000, B576000}, {921600, B921600}, {1000000, B1000000},
};

speed_t cserial_speed_for_rate(long rate) {
  for (size_t i = 0; i < sizeof speeds / sizeof speeds[0]; i++) {
    if (speeds[i].rate == rate) return speeds[i].speed;
  }
  return B0;
}

long cserial_rate_for_speed(speed_t speed) {
  if (speed == B0) return 0;
  for (size_t i = 0; i < sizeof speeds / sizeof speeds[0]; i++) {
    if (speeds[i].speed == speed) return speeds[i].rate;
  }
  return -1;
}

void cserial_make_raw_8n1(struct termios *t) {
  cfmakeraw(t);  // no echo, no canonical mode, no signals, no CR/NL mapping, CS8, no parity
  t->c_cflag &= ~(CSTOPB | CRTSCTS);
  t->c_cflag |= CLOCAL | CREAD;
  t->c_iflag &= ~(IXON | IXOFF | IXANY);
  // VMIN 1, VTIME 0: with O_NONBLOCK a read with nothing queued fails with EAGAIN. With VMIN 0
  // and VTIME 0 it would return 0 instead, which cannot be told from a hang-up.
  t->c_cc[VMIN] = 1;
  t->c_cc[VTIME] = 0;
}

speed_t cserial_output_speed(const struct termios *t) { return cfgetospeed(t); }

unsigned char cserial_vmin(const struct termios *t) { return t->c_cc[VMIN]; }

unsigned char cserial_vtime(const struct termios *t) { return t->c_cc[VTIME]; }

int cserial_is_raw_8n1(const struct termios *t) {
  if (t->c_lflag & (ECHO | ECHONL | ICANON | ISIG | IEXTEN)) return 0;
  if (t->c_iflag & (IGNBRK | BRKINT | PARMRK | ISTRIP | INLCR | IGNCR | ICRNL | IXON | IXOFF))
    return 0;
  if (t->c_oflag & OPOST) return 0;
  if ((t->c_cflag & CSIZE) != CS8) return 0;
  if (t->c_cflag & (PARENB | CSTOPB | CRTSCTS)) return 0;
  if ((t->c_cflag & (CLOCAL | CREAD)) != (CLOCAL | CREAD)) return 0;
  return t->c_cc[VMIN] == 1 && t->c_cc[VTIME] == 0;
}

int cserial_termios_equal(const struct termios *a, const struct termios *b) {
  return a->c_iflag == b->c_iflag && a->c_oflag == b->c_oflag && a->c_cflag == b->c_cflag &&
         a->c_lflag == b->c_lflag && a->c_line == b->c_line &&
         memcmp(a->c_cc, b->c_cc, sizeof a->c_cc) == 0 && cfgetispeed(a) == cfgetispeed(b) &&
         cfgetospeed(a) == cfgetospeed(b);
}

// MARK: - pty

int cserial_openpty(int *controller, int *device, char *path, size_t path_capacity) {
  struct termios raw;
  memset(&raw, 0, sizeof raw);
  cfmakeraw(&raw);
  cserial_make_raw_8n1(&raw);
  cfsetispeed(&raw, B9600);
  cfsetospeed(&raw, B9600);
  int c, d;
  if (openpty(&c, &d, NULL, &raw, NULL) != 0) return -1;
  int failure = 0;
  if (ptsname_r(c, path, path_capacity) != 0) failure = errno ? errno : ERANGE;
  if (!failure && fcntl(c, F_SETFD, FD_CLOEXEC) != 0) failure = errno;
  if (!failure && fcntl(d, F_SETFD, FD_CLOEXEC) != 0) failure = errno;
  int flags = failure ? 0 : fcntl(c, F_GETFL);
  if (!failure && (flags < 0 || fcntl(c, F_SETFL, flags | O_NONBLOCK) != 0)) failure = errno;
  if (failure) {
    close(c);
    close(d);
    errno = failure;
    return -1;
  }
  *controller = c;
  *device = d;
  return 0;
}

// MARK: - Test support

int cserial_thread_set_privilege_overrides(int enabled) {
  struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
  if (syscall(SYS_capget, &header, data) != 0) return -1;
  const uint32_t overrides =
      (1u << CAP_DAC_OVERRIDE) | (1u << CAP_DAC_READ_SEARCH) | (1u << CAP_SYS_ADMIN);
  if (enabled) {
    data[0].effective |= overrides & data[0].permitted;
  } else {
    data[0].effective &= ~overrides;
  }
  // The raw syscall, unlike glibc's set*id wrappers, changes the calling thread only.
  return (int)syscall(SYS_capset, &header, data);
}
