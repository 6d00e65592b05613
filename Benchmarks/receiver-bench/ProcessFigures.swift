import Chipsets
import Glibc
import NMEA
import POSIX
import SerialGPS
import SerialPort

// MARK: - 3. Wake-ups and memory, in a child process

/// This program run as a child with its standard input and output on pipes.
final class Child {
  let pid: pid_t
  let input: FileDescriptor
  let output: FileDescriptor

  init(_ arguments: [String]) throws {
    var executable = [CChar](repeating: 0, count: 4096)
    let length = readlink("/proc/self/exe", &executable, executable.count - 1)
    guard length > 0 else { throw BenchError.child("cannot find this program") }
    // Close-on-exec: only the child's ends reach the child (dup2 clears it on the copies).
    guard let toChild = try? FileDescriptor.pipe(), let fromChild = try? FileDescriptor.pipe()
    else { throw BenchError.child("pipe failed") }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, toChild.readEnd.rawValue, 0)
    posix_spawn_file_actions_adddup2(&actions, fromChild.writeEnd.rawValue, 1)
    let path = String(decoding: executable[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var pid: pid_t = 0
    let status = posix_spawn(&pid, path, &actions, nil, argv, environ)
    try? toChild.readEnd.close()
    try? fromChild.writeEnd.close()
    guard status == 0 else { throw BenchError.child("posix_spawn failed: \(status)") }
    self.pid = pid
    input = toChild.writeEnd
    output = fromChild.readEnd
  }

  func send(_ command: String) {
    try? input.writeAll((command + "\n").utf8)
  }

  /// The child's next line of output.
  func receive() -> String { readLine(from: output) ?? "" }

  func finish() -> Int32 {
    send("stop")
    let last = receive()
    var status: Int32 = 0
    waitpid(pid, &status, 0)
    try? input.close()
    try? output.close()
    if !last.isEmpty { note("child: \(last)") }
    return status
  }
}

/// The child's side: holds one receiver and does what the parent says, one line at a time.
/// Its main thread sleeps in `read` on standard input between commands.
func runChild(device: String?) -> Never {
  func reply(_ text: String) {
    try? FileDescriptor.standardOutput.writeAll((text + "\n").utf8)
  }
  var receiver: GPSReceiver?
  if let device {
    receiver = benchReceiver(device: device, family: .nmea)
  }
  let fixes = Mailbox(0)
  var events: ReceiverEvents?
  reply("ready")
  while let command = readLine(from: .standardInput) {
    switch command {
    case "subscribe":
      if let receiver {
        let subscription = receiver.subscribe()
        events = subscription
        DriverExecutor.task {
          for await event in subscription {
            if case .fix = event { fixes.update { $0 += 1 } }
          }
        }
      }
      reply("subscribed")
    case "unsubscribe":
      events?.cancel()
      events = nil
      if let receiver {
        while receiver.statistics.powerOffs < receiver.statistics.powerOns {
          sleep(milliseconds: 1)
        }
      }
      reply("unsubscribed")
    case "stop":
      events?.cancel()
      if let receiver {
        runBlocking { await receiver.shutdown() }
        let statistics = receiver.statistics
        reply(
          "fixes received \(fixes.read { $0 }), power-ons \(statistics.powerOns), "
            + "power-offs \(statistics.powerOffs)")
      } else {
        reply("")
      }
      exit(0)
    default:
      reply("unknown command \(command)")
    }
  }
  exit(0)
}

struct ProcessFigures {
  var idle: WakeUps
  var streaming: WakeUps
  var idleAfter: WakeUps
  var idleMemory: Memory
  var streamingMemory: Memory
  var emptyMemory: Memory
  var concurrencyMemory: Memory
  var concurrencyIdle: WakeUps
}

func measureProcess(seconds: Int) throws -> ProcessFigures {
  // The baseline: the same program doing nothing, its main thread asleep in read.
  let empty = try Child(["--empty"])
  _ = empty.receive()
  sleep(milliseconds: 500)
  let emptyMemory = Memory(pid: empty.pid)
  _ = empty.finish()

  // The floor for any program that has run one task: libdispatch's thread pool monitor.
  note("wake-ups: \(seconds) s of a program that ran one task and sleeps")
  let concurrency = try Child(["--empty-concurrency"])
  _ = concurrency.receive()
  sleep(milliseconds: 1000)
  let concurrencyBefore = threadSwitches(pid: concurrency.pid)
  sleep(milliseconds: seconds * 1000)
  let concurrencyIdle = WakeUps(
    from: concurrencyBefore, to: threadSwitches(pid: concurrency.pid), seconds: Double(seconds))
  let concurrencyMemory = Memory(pid: concurrency.pid)
  _ = concurrency.finish()

  let pty = try PseudoTerminal()
  let child = try Child(["--child", pty.devicePath])
  _ = child.receive()
  sleep(milliseconds: 1000)

  note("wake-ups: \(seconds) s idle, nobody subscribed")
  var before = threadSwitches(pid: child.pid)
  sleep(milliseconds: seconds * 1000)
  let idle = WakeUps(from: before, to: threadSwitches(pid: child.pid), seconds: Double(seconds))
  let idleMemory = Memory(pid: child.pid)

  note("wake-ups: \(seconds) s streaming 1 Hz")
  child.send("subscribe")
  _ = child.receive()
  // Feed one epoch a second, as a receiver does, until told to stop.
  let feeding = Mailbox(true)
  let fed = Mailbox(false)
  startThread(name: "bench-feeder") {
    var index = 0
    while feeding.read({ $0 }) {
      try? pty.write(epoch(index), timeout: .seconds(1))
      index += 1
      _ = feeding.wait(timeoutMilliseconds: 1000) { $0 ? nil : true }
    }
    fed.update { $0 = true }
  }
  sleep(milliseconds: 3000)  // powered on, streaming, the fix builder settled
  before = threadSwitches(pid: child.pid)
  let start = nanoseconds()
  sleep(milliseconds: seconds * 1000)
  let streaming = WakeUps(
    from: before, to: threadSwitches(pid: child.pid),
    seconds: Double(nanoseconds() - start) / 1e9)
  let streamingMemory = Memory(pid: child.pid)

  feeding.update { $0 = false }
  _ = fed.wait(timeoutMilliseconds: 5000) { $0 ? true : nil }
  child.send("unsubscribe")
  _ = child.receive()
  sleep(milliseconds: 1000)
  note("wake-ups: \(seconds) s idle again after the power-off")
  before = threadSwitches(pid: child.pid)
  sleep(milliseconds: seconds * 1000)
  let idleAfter = WakeUps(
    from: before, to: threadSwitches(pid: child.pid), seconds: Double(seconds))
  _ = child.finish()
  pty.hangUp()
  return ProcessFigures(
    idle: idle, streaming: streaming, idleAfter: idleAfter, idleMemory: idleMemory,
    streamingMemory: streamingMemory, emptyMemory: emptyMemory,
    concurrencyMemory: concurrencyMemory, concurrencyIdle: concurrencyIdle)
}
