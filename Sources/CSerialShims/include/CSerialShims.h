#ifndef SERIALGPS_CSERIALSHIMS_H
#define SERIALGPS_CSERIALSHIMS_H
// Thin C helpers for what Swift cannot call directly on a tty: the variadic ioctl, termios
// macros and flag arithmetic, and openpty (whose header the Glibc module does not export).
// What is not about ttys (eventfd, errno names, threads) is in CPOSIX. Every function returns
// what the underlying call returns and leaves errno as the call left it, so the Swift side
// reads errno exactly as it would after a direct call.

#include <stddef.h>
#include <termios.h>

// MARK: - ioctl

/// TIOCEXCL: further opens of the tty fail with EBUSY (unless the opener has CAP_SYS_ADMIN).
int cserial_set_exclusive(int fd);
/// TIOCGEXCL: whether TIOCEXCL is set on the tty (by anyone). Linux 3.8 and later.
int cserial_get_exclusive(int fd, int *exclusive);
/// TIOCNXCL: clears TIOCEXCL. The flag belongs to the tty, not to the open file, so it outlives
/// a close while anyone else still holds the tty open.
int cserial_clear_exclusive(int fd);
/// TIOCMBIS: raises the given modem lines (a mask of CSERIAL_MODEM_LINE_*).
int cserial_modem_lines_raise(int fd, int lines);
/// TIOCMBIC: lowers the given modem lines.
int cserial_modem_lines_lower(int fd, int lines);
/// TIOCMGET: the current modem lines.
int cserial_modem_lines_get(int fd, int *lines);
/// FIONREAD (TIOCINQ on a tty): how many received bytes wait to be read.
int cserial_input_queued(int fd, int *count);

/// TIOCM_DTR, data terminal ready.
extern const int CSERIAL_MODEM_LINE_DTR;
/// TIOCM_RTS, request to send.
extern const int CSERIAL_MODEM_LINE_RTS;

// MARK: - termios

/// The termios speed constant (B9600 …) for a rate in bits per second, or 0 (B0) when the C
/// library has none for that rate.
speed_t cserial_speed_for_rate(long rate);
/// The rate in bits per second for a termios speed constant, or -1 for an unknown constant.
long cserial_rate_for_speed(speed_t speed);
/// Raw 8N1 as cfmakeraw does it, plus CLOCAL (ignore carrier) and CREAD (enable the receiver),
/// no hardware or software flow control, VMIN 1 and VTIME 0. HUPCL is left as it was.
void cserial_make_raw_8n1(struct termios *attributes);
/// The speed (cfgetospeed) of a termios.
speed_t cserial_output_speed(const struct termios *attributes);
/// c_cc[VMIN] and c_cc[VTIME].
unsigned char cserial_vmin(const struct termios *attributes);
unsigned char cserial_vtime(const struct termios *attributes);
/// Whether the termios is raw 8N1 with the receiver on and flow control off, as
/// cserial_make_raw_8n1 leaves it.
int cserial_is_raw_8n1(const struct termios *attributes);
/// Whether two termios are equal in every field the kernel keeps (flags, line discipline,
/// control characters, speeds).
int cserial_termios_equal(const struct termios *a, const struct termios *b);

// MARK: - pty

/// openpty with the device side already raw 8N1 (so nothing is echoed back to the controller
/// before a port configures it), both descriptors close-on-exec, and the controller
/// non-blocking. The device path is written into `path` (ptsname_r).
int cserial_openpty(int *controller, int *device, char *path, size_t path_capacity);

// MARK: - Test support

/// Test support. Drops (0) or restores (1) CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH and
/// CAP_SYS_ADMIN in the effective set of the calling thread only, so a test running as root can
/// see what an unprivileged user sees (EACCES from file modes, EBUSY from TIOCEXCL) without
/// touching other threads. Restoring raises only what the permitted set still holds.
int cserial_thread_set_privilege_overrides(int enabled);

#endif
