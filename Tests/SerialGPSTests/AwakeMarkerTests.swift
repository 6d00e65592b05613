import Foundation
import Testing

@testable import SerialGPS

/// Issue 14 item 2: a receiver left awake by a process killed outright is put to standby by
/// the next process that opens it; without that evidence nothing is opened.
@Suite struct AwakeMarkerTests {
  /// A fresh marker directory.
  func makeDirectory() throws -> String {
    let path = NSTemporaryDirectory() + "serialgps-markers-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
  }

  /// The PID of a process that has exited.
  func deadProcess() throws -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/true")
    try process.run()
    process.waitUntilExit()
    return process.processIdentifier
  }

  func writeMarker(_ markers: AwakeMarkers, _ identity: String, pid: Int32) throws {
    try "\(pid)\n".write(toFile: markers.path(for: identity), atomically: true, encoding: .utf8)
  }

  func makeReceiver(_ connector: MemoryConnector, _ markers: AwakeMarkers) -> GPSReceiver {
    var options = GPSReceiver.Options()
    options.linger = .zero
    options.chipset = .custom(AcknowledgedPowerCommands())
    options.acknowledgementTimeout = .seconds(5)
    options.awakeMarkers = markers
    return GPSReceiver(connector: connector, options: options, clock: SystemClock())
  }

  func sent(_ connector: MemoryConnector) -> [[String]] {
    connector.connections.map { $0.writes.map { String(decoding: $0, as: UTF8.self) } }
  }

  @Test func aMarkerOfADeadProcessGetsAStandbyWithNoSubscriber() async throws {
    let markers = AwakeMarkers(directory: try makeDirectory())
    try writeMarker(markers, "serial 42", pid: try deadProcess())
    let connector = slowAcknowledgingConnector(delay: .milliseconds(5), markerIdentity: "serial 42")
    let receiver = makeReceiver(connector, markers)
    #expect(await eventually { connector.opens == 1 && connector.openCount == 0 })
    #expect(sent(connector) == [[AcknowledgedPowerCommands.standby]])
    #expect(await eventually { markers.owner(of: "serial 42") == nil })
    #expect(receiver.statistics.powerOns == 0)
    #expect(receiver.statistics.commandsFailed == 0)
    await receiver.shutdown()
    #expect(connector.opens == 1)
  }

  @Test func noMarkerOrALiveOwnerOpensNothing() async throws {
    let markers = AwakeMarkers(directory: try makeDirectory())
    // Another receiver's marker, and this one's marked by a process that still runs.
    try writeMarker(markers, "serial 7", pid: try deadProcess())
    try writeMarker(markers, "serial 8", pid: getppid())
    for identity in ["serial 1", "serial 8"] {
      let connector = MemoryConnector(markerIdentity: identity)
      let receiver = makeReceiver(connector, markers)
      try await Task.sleep(for: .milliseconds(100))
      #expect(connector.opens == 0, "\(identity)")
      await receiver.shutdown()
      #expect(connector.opens == 0, "\(identity)")
    }
    #expect(markers.owner(of: "serial 8") == getppid())
  }

  /// A marker is put in place whole (written under another name, then renamed), never
  /// created empty and written after: a process killed in between would leave a marker that
  /// names no process, which the next one cannot take as left awake. Shown by a hard link to
  /// the previous marker: rewritten in place, the link would read the new PID too.
  @Test func aMarkerIsReplacedWholeNeverWrittenInPlace() throws {
    let directory = try makeDirectory()
    let markers = AwakeMarkers(directory: directory)
    try writeMarker(markers, "serial 9", pid: 999_999)
    let witness = directory + "/previous"
    #expect(link(markers.path(for: "serial 9"), witness) == 0)
    markers.markAwake("serial 9")
    #expect(markers.owner(of: "serial 9") == getpid())
    #expect(try String(contentsOfFile: witness, encoding: .utf8) == "999999\n")
    let names = try FileManager.default.contentsOfDirectory(atPath: directory)
    #expect(
      names.sorted()
        == [(markers.path(for: "serial 9") as NSString).lastPathComponent, "previous"].sorted())
  }

  @Test func aPowerOnMarksTheReceiverAndTheStandbyClearsIt() async throws {
    let markers = AwakeMarkers(directory: try makeDirectory())
    let connector = slowAcknowledgingConnector(delay: .milliseconds(5), markerIdentity: "usb 1-4")
    let receiver = makeReceiver(connector, markers)
    let log = EventLog(receiver.subscribe())
    #expect(await eventually { receiver.statistics.powerOns == 1 })
    #expect(await eventually { markers.owner(of: "usb 1-4") == getpid() })
    log.stop()
    #expect(await eventually { receiver.statistics.powerOffs == 1 })
    #expect(markers.owner(of: "usb 1-4") == nil)
    await receiver.shutdown()
  }

  @Test func aSubscriberArrivingFirstWins() async throws {
    let markers = AwakeMarkers(directory: try makeDirectory())
    try writeMarker(markers, "serial 9", pid: try deadProcess())
    let connector = slowAcknowledgingConnector(delay: .milliseconds(5), markerIdentity: "serial 9")
    // Made and subscribed on the driver's thread: the controller sees both at once.
    let (receiver, log) = await Task(executorPreference: DriverExecutor.shared) {
      let receiver = makeReceiver(connector, markers)
      return (receiver, EventLog(receiver.subscribe()))
    }.value
    #expect(await eventually { log.fixes.contains { !$0.isReplay } })
    #expect(sent(connector) == [[AcknowledgedPowerCommands.wake]])
    #expect(await eventually { markers.owner(of: "serial 9") == getpid() })
    log.stop()
    await receiver.shutdown()
    #expect(
      sent(connector) == [[AcknowledgedPowerCommands.wake, AcknowledgedPowerCommands.standby]])
  }
}
