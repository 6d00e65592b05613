#include "CTimeShims.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <termios.h>

size_t ctime_sock_sample_size(void) { return sizeof(struct ctime_sock_sample); }

size_t ctime_shm_time_size(void) { return sizeof(struct ctime_shm_time); }

struct ctime_shm_time *ctime_shm_attach(int unit, int permissions) {
  int id = shmget((key_t)(CTIME_NTP_SHM_KEY_BASE + unit), sizeof(struct ctime_shm_time),
                  IPC_CREAT | (permissions & 0777));
  if (id == -1) return NULL;
  void *segment = shmat(id, NULL, 0);
  if (segment == (void *)-1) return NULL;
  return segment;
}

int ctime_shm_detach(struct ctime_shm_time *segment) { return shmdt(segment); }

int ctime_shm_permissions(int unit) {
  int id = shmget((key_t)(CTIME_NTP_SHM_KEY_BASE + unit), 0, 0);
  if (id == -1) return -1;
  struct shmid_ds status;
  if (shmctl(id, IPC_STAT, &status) == -1) return -1;
  return (int)(status.shm_perm.mode & 0777);
}

int ctime_shm_stat(int unit, struct ctime_shm_status *status) {
  int id = shmget((key_t)(CTIME_NTP_SHM_KEY_BASE + unit), 0, 0);
  if (id == -1) return errno == ENOENT ? 0 : -1;
  struct shmid_ds segment;
  if (shmctl(id, IPC_STAT, &segment) == -1) return -1;
  status->id = id;
  status->size = segment.shm_segsz;
  status->attached = (unsigned long)segment.shm_nattch;
  status->creator = (int)segment.shm_cpid;
  status->last = (int)segment.shm_lpid;
  return 1;
}

void ctime_shm_prepare(struct ctime_shm_time *segment, int precision) {
  memset((void *)segment, 0, sizeof(*segment));
  segment->mode = 1;
  segment->leap = 3;
  segment->precision = precision;
  segment->nsamples = 3;
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

void ctime_shm_write(struct ctime_shm_time *segment, int64_t clock_sec, int32_t clock_nsec,
                     int64_t receive_sec, int32_t receive_nsec, int leap, int precision) {
  segment->valid = 0;
  segment->count++;
  // The reader compares count before and after reading the times: no store of a time may be
  // seen before the first count or after the second, by the compiler or by another core.
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  segment->clockTimeStampSec = (time_t)clock_sec;
  segment->clockTimeStampUSec = clock_nsec / 1000;
  segment->clockTimeStampNSec = (unsigned)clock_nsec;
  segment->receiveTimeStampSec = (time_t)receive_sec;
  segment->receiveTimeStampUSec = receive_nsec / 1000;
  segment->receiveTimeStampNSec = (unsigned)receive_nsec;
  segment->leap = leap;
  segment->precision = precision;
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  segment->count++;
  segment->valid = 1;
}

int ctime_shm_read(const struct ctime_shm_time *segment, int64_t *clock_sec, int32_t *clock_nsec,
                   int64_t *receive_sec, int32_t *receive_nsec, int *leap, int *precision) {
  if (!segment->valid) return 0;
  int before = segment->count;
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  *clock_sec = segment->clockTimeStampSec;
  *clock_nsec = (int32_t)segment->clockTimeStampNSec;
  *receive_sec = segment->receiveTimeStampSec;
  *receive_nsec = (int32_t)segment->receiveTimeStampNSec;
  *leap = segment->leap;
  *precision = segment->precision;
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  return segment->count == before ? 1 : -1;
}

unsigned long ctime_pps_fetch_request(void) { return PPS_FETCH; }
unsigned long ctime_pps_getcap_request(void) { return PPS_GETCAP; }
unsigned long ctime_pps_getparams_request(void) { return PPS_GETPARAMS; }
unsigned long ctime_pps_setparams_request(void) { return PPS_SETPARAMS; }

int ctime_pps_capabilities(int fd, int *capabilities) {
  return ioctl(fd, PPS_GETCAP, capabilities);
}

int ctime_pps_enable(int fd, int mode) {
  struct pps_kparams parameters;
  memset(&parameters, 0, sizeof(parameters));
  if (ioctl(fd, PPS_GETPARAMS, &parameters) == -1) return -1;
  parameters.api_version = PPS_API_VERS;
  parameters.mode |= mode;
  return ioctl(fd, PPS_SETPARAMS, &parameters);
}

int ctime_pps_fetch(int fd, int64_t timeout_sec, int32_t timeout_nsec, struct pps_fdata *data) {
  memset(data, 0, sizeof(*data));
  if (timeout_sec < 0) {
    data->timeout.flags = PPS_TIME_INVALID;
  } else {
    data->timeout.sec = timeout_sec;
    data->timeout.nsec = timeout_nsec;
  }
  return ioctl(fd, PPS_FETCH, data);
}

const int CTIME_MODEM_LINE_CD = TIOCM_CD;

int ctime_wait_modem_change(int fd, int lines) { return ioctl(fd, TIOCMIWAIT, lines); }
