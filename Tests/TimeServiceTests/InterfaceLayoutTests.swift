import CTimeShims
import Foundation
import Testing

/// The three binary interfaces, as Swift sees the C declarations, against what gcc makes of
/// independent definitions: chrony's `struct sock_sample` and ntpd's `struct shmTime`
/// written out as their sources define them, and <linux/pps.h> as the kernel ships it. On
/// an arm64 or armhf board the same test checks that board's layout; nothing assumes
/// x86-64.
@Suite(
  "Binary interfaces against the C compiler",
  .enabled(if: Tools.compiler, "gcc is not installed"))
struct InterfaceLayoutTests {
  static let program = #"""
    #include <stddef.h>
    #include <stdio.h>
    #include <sys/time.h>
    #include <time.h>
    #include <linux/pps.h>

    /* chrony 4.3, refclock_sock.c */
    struct sock_sample {
      struct timeval tv;
      double offset;
      int pulse;
      int leap;
      int _pad;
      int magic;
    };

    /* ntpd, refclock_shm.c */
    struct shmTime {
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

    #define SHOW(name, value) printf("%s %lu\n", name, (unsigned long)(value))

    int main(void) {
      SHOW("sock_sample", sizeof(struct sock_sample));
      SHOW("sock_sample.offset", offsetof(struct sock_sample, offset));
      SHOW("sock_sample.pulse", offsetof(struct sock_sample, pulse));
      SHOW("sock_sample.leap", offsetof(struct sock_sample, leap));
      SHOW("sock_sample.magic", offsetof(struct sock_sample, magic));
      SHOW("shmTime", sizeof(struct shmTime));
      SHOW("shmTime.clockTimeStampSec", offsetof(struct shmTime, clockTimeStampSec));
      SHOW("shmTime.receiveTimeStampSec", offsetof(struct shmTime, receiveTimeStampSec));
      SHOW("shmTime.leap", offsetof(struct shmTime, leap));
      SHOW("shmTime.valid", offsetof(struct shmTime, valid));
      SHOW("shmTime.clockTimeStampNSec", offsetof(struct shmTime, clockTimeStampNSec));
      SHOW("shmTime.receiveTimeStampNSec", offsetof(struct shmTime, receiveTimeStampNSec));
      SHOW("pps_fdata", sizeof(struct pps_fdata));
      SHOW("pps_fdata.info.assert_tu", offsetof(struct pps_fdata, info.assert_tu));
      SHOW("pps_fdata.info.clear_tu", offsetof(struct pps_fdata, info.clear_tu));
      SHOW("pps_fdata.info.current_mode", offsetof(struct pps_fdata, info.current_mode));
      SHOW("pps_fdata.timeout", offsetof(struct pps_fdata, timeout));
      SHOW("pps_ktime", sizeof(struct pps_ktime));
      SHOW("PPS_FETCH", PPS_FETCH);
      SHOW("PPS_GETCAP", PPS_GETCAP);
      SHOW("PPS_GETPARAMS", PPS_GETPARAMS);
      SHOW("PPS_SETPARAMS", PPS_SETPARAMS);
      SHOW("pointer", sizeof(void *));
      return 0;
    }
    """#

  /// What gcc says, name → value.
  static func compiled() throws -> [String: UInt] {
    let directory = try ScratchDirectory("layout")
    defer { directory.remove() }
    try program.write(toFile: directory.path + "/layout.c", atomically: true, encoding: .utf8)
    let gcc = try #require(Tools.gcc)
    let build = try Tools.run(
      gcc, [directory.path + "/layout.c", "-o", directory.path + "/layout"])
    try #require(build.status == 0, "gcc failed: \(build.error)")
    let run = try Tools.run(directory.path + "/layout", [])
    var values: [String: UInt] = [:]
    for line in run.output.split(separator: "\n") {
      let parts = line.split(separator: " ")
      if parts.count == 2, let value = UInt(parts[1]) { values[String(parts[0])] = value }
    }
    return values
  }

  @Test func chronySample() throws {
    let c = try Self.compiled()
    #expect(UInt(ctime_sock_sample_size()) == c["sock_sample"])
    #expect(UInt(MemoryLayout<ctime_sock_sample>.size) == c["sock_sample"])
    #expect(UInt(MemoryLayout<ctime_sock_sample>.offset(of: \.offset)!) == c["sock_sample.offset"])
    #expect(UInt(MemoryLayout<ctime_sock_sample>.offset(of: \.pulse)!) == c["sock_sample.pulse"])
    #expect(UInt(MemoryLayout<ctime_sock_sample>.offset(of: \.leap)!) == c["sock_sample.leap"])
    #expect(UInt(MemoryLayout<ctime_sock_sample>.offset(of: \.magic)!) == c["sock_sample.magic"])
  }

  @Test func ntpSharedMemory() throws {
    let c = try Self.compiled()
    typealias Segment = ctime_shm_time
    #expect(UInt(ctime_shm_time_size()) == c["shmTime"])
    #expect(UInt(MemoryLayout<Segment>.size) == c["shmTime"])
    #expect(
      UInt(MemoryLayout<Segment>.offset(of: \.clockTimeStampSec)!) == c["shmTime.clockTimeStampSec"]
    )
    #expect(
      UInt(MemoryLayout<Segment>.offset(of: \.receiveTimeStampSec)!)
        == c["shmTime.receiveTimeStampSec"])
    #expect(UInt(MemoryLayout<Segment>.offset(of: \.leap)!) == c["shmTime.leap"])
    #expect(UInt(MemoryLayout<Segment>.offset(of: \.valid)!) == c["shmTime.valid"])
    #expect(
      UInt(MemoryLayout<Segment>.offset(of: \.clockTimeStampNSec)!)
        == c["shmTime.clockTimeStampNSec"])
    #expect(
      UInt(MemoryLayout<Segment>.offset(of: \.receiveTimeStampNSec)!)
        == c["shmTime.receiveTimeStampNSec"])
  }

  @Test func kernelPPS() throws {
    let c = try Self.compiled()
    #expect(UInt(MemoryLayout<pps_fdata>.size) == c["pps_fdata"])
    #expect(
      UInt(MemoryLayout<pps_fdata>.offset(of: \.info.assert_tu)!) == c["pps_fdata.info.assert_tu"])
    #expect(
      UInt(MemoryLayout<pps_fdata>.offset(of: \.info.clear_tu)!) == c["pps_fdata.info.clear_tu"])
    #expect(
      UInt(MemoryLayout<pps_fdata>.offset(of: \.info.current_mode)!)
        == c["pps_fdata.info.current_mode"])
    #expect(UInt(MemoryLayout<pps_fdata>.offset(of: \.timeout)!) == c["pps_fdata.timeout"])
    #expect(UInt(MemoryLayout<pps_ktime>.size) == c["pps_ktime"])
    #expect(UInt(ctime_pps_fetch_request()) == c["PPS_FETCH"])
    #expect(UInt(ctime_pps_getcap_request()) == c["PPS_GETCAP"])
    #expect(UInt(ctime_pps_getparams_request()) == c["PPS_GETPARAMS"])
    #expect(UInt(ctime_pps_setparams_request()) == c["PPS_SETPARAMS"])
  }

  /// The request numbers follow the kernel's generic ioctl encoding (arm, arm64, x86,
  /// riscv): direction in bits 30–31 (1 write, 2 read), the argument's size in bits 16–29,
  /// the type ('p') and the number. <linux/pps.h> declares every argument as a pointer, so
  /// the size is a pointer's: 8 on arm64 and x86-64, 4 on armhf — the numbers differ between
  /// 64- and 32-bit boards.
  @Test func requestNumbersAreTheGenericEncoding() {
    let pointer = UInt(MemoryLayout<UnsafeRawPointer>.size)
    func request(_ direction: UInt, _ number: UInt) -> UInt {
      direction << 30 | pointer << 16 | UInt(UInt8(ascii: "p")) << 8 | number
    }
    #expect(UInt(ctime_pps_getparams_request()) == request(2, 0xA1))
    #expect(UInt(ctime_pps_setparams_request()) == request(1, 0xA2))
    #expect(UInt(ctime_pps_getcap_request()) == request(2, 0xA3))
    #expect(UInt(ctime_pps_fetch_request()) == request(3, 0xA4))
    #expect(UInt(ctime_pps_fetch_request()) == (pointer == 8 ? 0xC008_70A4 : 0xC004_70A4))
    // struct pps_ktime is 16 bytes on every Linux ABI with an 8-byte-aligned __s64 (arm64,
    // armhf, x86-64); only i386 packs it differently (the kernel's compat structure).
    #expect(MemoryLayout<pps_ktime>.size == 16)
  }
}
