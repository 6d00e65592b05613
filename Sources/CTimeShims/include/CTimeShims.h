#ifndef SERIALGPS_CTIMESHIMS_H
#define SERIALGPS_CTIMESHIMS_H
// The C side of the time service: the three binary interfaces it speaks, declared here from
// the C headers and libraries that define them so that their layout is the C compiler's on
// every architecture (armhf, arm64, x86-64), never a copy written out in Swift.
//
// - chrony's SOCK refclock sample (refclock_sock.c), built around the platform's timeval;
// - ntpd's shared-memory segment (`struct shmTime`, refclock_shm.c), around its time_t;
// - the kernel's RFC 2783 PPS API (<linux/pps.h>) and the TIOCMIWAIT modem-line wait.
//
// Every function returns what the underlying call returns and leaves errno as the call left
// it.

#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>
#include <time.h>
#include <linux/pps.h>

// MARK: - chrony SOCK

/// chrony's SOCK_MAGIC ("SOCK").
#define CTIME_SOCK_MAGIC 0x534f434b

/// One sample as chronyd's SOCK refclock reads it: chrony checks the datagram's length
/// against its own sizeof, so the struct must be the platform's, field for field.
struct ctime_sock_sample {
  /// The system time of the measurement.
  struct timeval tv;
  /// True time minus system time at `tv`, seconds.
  double offset;
  /// Non-zero for a pulse whose whole seconds another source must supply.
  int pulse;
  /// 0 no warning, 1 insert, 2 delete a leap second at the end of the day.
  int leap;
  int _pad;
  /// CTIME_SOCK_MAGIC.
  int magic;
};

/// sizeof(struct ctime_sock_sample), for tests.
size_t ctime_sock_sample_size(void);

// MARK: - NTP shared memory

/// ntpd's SHM key base: "NTP0" is unit 0.
#define CTIME_NTP_SHM_KEY_BASE 0x4E545030

/// The segment ntpd's SHM driver (and chrony's, and gpsd's ntpshmmon) reads, as ntpd defines
/// it. `time_t` makes its layout the platform's.
struct ctime_shm_time {
  int mode;
  volatile int count;
  time_t clockTimeStampSec;
  int clockTimeStampUSec;
  time_t receiveTimeStampSec;
  int receiveTimeStampUSec;
  int leap;
  int precision;
  int nsamples;
  volatile int valid;
  unsigned clockTimeStampNSec;
  unsigned receiveTimeStampNSec;
  int dummy[8];
};

/// sizeof(struct ctime_shm_time), for tests.
size_t ctime_shm_time_size(void);

/// shmget(CTIME_NTP_SHM_KEY_BASE + unit, sizeof, IPC_CREAT | permissions) and shmat: the
/// segment, or NULL with errno set.
struct ctime_shm_time *ctime_shm_attach(int unit, int permissions);
/// shmdt.
int ctime_shm_detach(struct ctime_shm_time *segment);
/// The permission bits of the unit's segment (shmctl IPC_STAT), or -1 with errno set.
int ctime_shm_permissions(int unit);

/// What shmctl IPC_STAT says of a unit's segment: its size, how many processes have it
/// attached, who created it and who attached or detached it last.
struct ctime_shm_status {
  int id;
  size_t size;
  unsigned long attached;
  int creator;
  int last;
};

/// The status of the unit's segment: 1 and `status` filled, 0 when there is no segment, -1
/// with errno set when it cannot be read (another user's segment without read permission).
int ctime_shm_stat(int unit, struct ctime_shm_status *status);

/// Prepares a segment for ntpd's mode 1 (count/valid) protocol, as gpsd does when it takes
/// one: everything cleared, mode 1, leap 3 ("not in sync", so a reader ignores it until the
/// first sample), the given precision, nsamples 3.
void ctime_shm_prepare(struct ctime_shm_time *segment, int precision);

/// Writes one sample with ntpd's mode 1 protocol: valid cleared, count raised, the times (both
/// in microseconds and nanoseconds), leap and precision written between full memory barriers,
/// count raised again, valid set. A reader that sees the same count before and after reading
/// has a consistent sample. `clock_*` is the true time (the receiver's), `receive_*` the system
/// time at that instant.
void ctime_shm_write(struct ctime_shm_time *segment, int64_t clock_sec, int32_t clock_nsec,
                     int64_t receive_sec, int32_t receive_nsec, int leap, int precision);

/// Reads a segment as ntpd's mode 1 reader does, without clearing `valid`, for tests: 1 and
/// the fields when valid and consistent, 0 when not valid, -1 when the count changed.
int ctime_shm_read(const struct ctime_shm_time *segment, int64_t *clock_sec, int32_t *clock_nsec,
                   int64_t *receive_sec, int32_t *receive_nsec, int *leap, int *precision);

// MARK: - RFC 2783 kernel PPS

/// The PPS_FETCH, PPS_GETCAP, PPS_GETPARAMS and PPS_SETPARAMS request numbers from
/// <linux/pps.h>, for tests.
unsigned long ctime_pps_fetch_request(void);
unsigned long ctime_pps_getcap_request(void);
unsigned long ctime_pps_getparams_request(void);
unsigned long ctime_pps_setparams_request(void);

/// PPS_GETCAP: the source's capability bits (PPS_CAPTUREASSERT, PPS_CANWAIT …).
int ctime_pps_capabilities(int fd, int *capabilities);
/// PPS_GETPARAMS then PPS_SETPARAMS with `mode` added to the current mode bits (to capture
/// assert or clear events with timespec stamps). Needs write access to the device.
int ctime_pps_enable(int fd, int mode);
/// PPS_FETCH: waits until the next event or until `timeout` (seconds and nanoseconds; negative
/// seconds: no limit) and fills `data`. Fails with ETIMEDOUT when the time passed.
int ctime_pps_fetch(int fd, int64_t timeout_sec, int32_t timeout_nsec, struct pps_fdata *data);

// MARK: - modem lines

/// TIOCM_CD, the carrier-detect line.
extern const int CTIME_MODEM_LINE_CD;
/// TIOCMIWAIT: blocks until one of the modem input lines in `lines` changes (no timeout; a
/// hang-up or a signal ends it). The lines' state is read with CSerialShims'
/// cserial_modem_lines_get.
int ctime_wait_modem_change(int fd, int lines);

#endif
