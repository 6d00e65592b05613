import Chipsets
import Glibc
import NMEA
import POSIX
import Replay
import Simulator

/// Monotonic time since an arbitrary origin.
func monotonicNow() -> Duration { MonotonicInstant.now.sinceOrigin }

func sleep(milliseconds: Int) { sleepThread(for: .milliseconds(milliseconds)) }

/// A GPS receiver (or a device that is not one) behind the master side of a umockdev pty.
///
/// It answers what the host writes as the chip would (Replay's `ReceiverModel`: acknowledges
/// u-blox and MediaTek commands, stops and starts streaming on their power commands) and,
/// while it is running, sends an epoch (GGA and RMC at its own position) every 250 ms. It
/// records every byte the host wrote, so a scenario can tell whether a port was written to.
final class MockReceiver: @unchecked Sendable {
  enum Behaviour {
    /// Streams NMEA and answers commands as `profile` does.
    case receiver(ReceiverProfile)
    /// A u-blox receiver behind a generic bridge that says what it is in a `$GPTXT` banner.
    /// A real one sends the banner at start-up only; the mock cannot tell when the port is
    /// opened, so it repeats it with each epoch.
    case receiverWithBanner(ReceiverProfile)
    /// Sends nothing and answers nothing: a modem, a 3-D printer.
    case silent
  }

  /// The node, for messages: `/dev/ttyACM0`.
  let node: String
  /// Whose fixes these are, as the scenario reports them.
  let name: String
  let latitude: Double
  private let master: Int32
  private let behaviour: Behaviour
  private let lock = Lock()
  private var model: ReceiverModel?
  private var written: [UInt8] = []
  private var epoch = 0
  private var stopped = false
  /// Passes of the reading loop, for ``settle()``.
  private var passes = 0
  private var thread: OwnThread?
  private let origin = monotonicNow()

  init(node: String, master: Int32, name: String, latitude: Double, behaviour: Behaviour) {
    self.node = node
    self.master = master
    self.name = name
    self.latitude = latitude
    self.behaviour = behaviour
    switch behaviour {
    case .receiver(let profile), .receiverWithBanner(let profile):
      model = ReceiverModel(profile: profile, power: .running, wakeDelay: .milliseconds(50))
    case .silent:
      model = nil
    }
    // Writes never block the mock: with nobody reading the other side, they are dropped.
    let flags = fcntl(master, F_GETFL)
    _ = fcntl(master, F_SETFL, flags | O_NONBLOCK)
    thread = OwnThread.start(name: "testbed-mock") { [self] in run() }
  }

  /// Everything the host wrote to this port.
  var bytesWritten: [UInt8] { lock.withLock { written } }

  /// The commands the host sent, as the model decoded them, in order.
  var commands: [String] {
    lock.withLock { model?.received.compactMap { $0.command.map { "\($0)" } } ?? [] }
  }

  var powerState: String { lock.withLock { model.map { "\($0.power)" } ?? "silent" } }

  /// Returns once the mock has read and handled everything the host wrote so far. The driver
  /// closes the port right after its last command (a standby), and on a loaded machine those
  /// bytes can still sit unread in the pty when a scenario looks at what the mock received.
  func settle() {
    let deadline = monotonicNow() + .seconds(5)
    var pending: Int32 = 1
    // FIONREAD on the master: bytes the host wrote that the mock has not read yet.
    while !lock.withLock({ stopped }), ioctl(master, 0x541B, &pending) == 0, pending > 0,
      monotonicNow() < deadline
    {
      sleep(milliseconds: 1)
    }
    // Then two passes of the loop, so that bytes it had read are handled too.
    let start = lock.withLock { passes }
    while lock.withLock({ !stopped && passes < start + 2 }), monotonicNow() < deadline {
      sleep(milliseconds: 1)
    }
  }

  /// Stops the thread; the pty stays as umockdev keeps it.
  func stop() {
    lock.withLock { stopped = true }
    thread?.joinBlocking()
  }

  /// The pty's slave side, `/dev/pts/N`, as `/proc/self/fd` shows a descriptor open on it.
  var slavePath: String? { Self.slavePath(of: master) }

  static func slavePath(of master: Int32) -> String? {
    var number: UInt32 = 0
    // TIOCGPTN
    guard ioctl(master, 0x8004_5430, &number) == 0 else { return nil }
    return "/dev/pts/\(number)"
  }

  /// How many descriptors of this process are open on the slave side: the driver's port.
  var openDescriptors: Int {
    guard let slave = slavePath else { return -1 }
    return descriptorsOpen(on: slave)
  }

  private func run() {
    var buffer = [UInt8](repeating: 0, count: 1024)
    var nextEpoch = monotonicNow()
    while !lock.withLock({
      passes += 1
      return stopped
    }) {
      var descriptor = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
      let ready = poll(&descriptor, 1, 50)
      if ready > 0, descriptor.revents & Int16(POLLIN) != 0 {
        let count = read(master, &buffer, buffer.count)
        if count > 0 { received(Array(buffer[0..<count])) }
      } else if ready > 0 {
        // POLLHUP: nobody has the port open. Nothing to read; do not spin.
        sleep(milliseconds: 50)
      }
      let now = monotonicNow()
      if now >= nextEpoch {
        nextEpoch = now + .milliseconds(250)
        tick(at: now - origin)
      }
    }
  }

  private func received(_ bytes: [UInt8]) {
    let replies = lock.withLock { () -> [[UInt8]] in
      written += bytes
      return model?.receive(bytes, at: monotonicNow() - origin) ?? []
    }
    for reply in replies { send(reply) }
  }

  private func tick(at now: Duration) {
    let (replies, streaming, count) = lock.withLock { () -> ([[UInt8]], Bool, Int) in
      guard model != nil else { return ([], false, 0) }
      let replies = model!.advance(to: now)
      self.epoch += 1
      return (replies, model!.power.isStreaming, self.epoch)
    }
    for reply in replies { send(reply) }
    guard streaming else { return }
    var burst: [UInt8] = []
    if case .receiverWithBanner = behaviour {
      burst += NMEAChecksum.frame("GPTXT,01,01,02,u-blox ag - www.u-blox.com")
      burst += NMEAChecksum.frame("GPTXT,01,01,02,HW  UBX-M8030  00080000")
    }
    let seconds = count % 86_400
    let time =
      twoDigits(12 + seconds / 3600 % 12) + twoDigits(seconds / 60 % 60)
      + twoDigits(seconds % 60) + ".00"
    let degrees = Int(latitude)
    let minutes = (latitude - Double(degrees)) * 60
    let minutesText = (minutes < 10 ? "0" : "") + fixed(minutes, digits: 4)
    let position = "\(degrees)\(minutesText),N,01131.000,E"
    burst += NMEAChecksum.frame("GPGGA,\(time),\(position),1,08,0.9,545.4,M,46.9,M,,")
    burst += NMEAChecksum.frame("GPRMC,\(time),A,\(position),0.0,0.0,010125,,,A")
    send(burst)
  }

  private func send(_ bytes: [UInt8]) {
    _ = bytes.withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
  }
}

private func twoDigits(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }

private func fixed(_ value: Double, digits: Int) -> String {
  var scale = 1.0
  for _ in 0..<digits { scale *= 10 }
  let scaled = Int((value * scale).rounded())
  let whole = scaled / Int(scale)
  var fraction = String(scaled % Int(scale))
  while fraction.count < digits { fraction = "0" + fraction }
  return "\(whole).\(fraction)"
}

/// How many descriptors of this process point at `path` (by `/proc/self/fd`).
func descriptorsOpen(on path: String) -> Int {
  guard let directory = opendir("/proc/self/fd") else { return -1 }
  defer { closedir(directory) }
  var count = 0
  var target = [CChar](repeating: 0, count: 4096)
  while let entry = readdir(directory) {
    let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
      String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
    }
    guard name.first?.isNumber == true else { continue }
    let length = readlink("/proc/self/fd/" + name, &target, target.count - 1)
    guard length > 0 else { continue }
    let link = String(decoding: target[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    if link == path { count += 1 }
  }
  return count
}
