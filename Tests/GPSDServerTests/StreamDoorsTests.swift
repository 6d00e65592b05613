import NMEA
import POSIX
import SerialGPS
import Testing

@testable import GPSDServer
@testable import NMEA

/// `StreamDoors`: the stream ports' decisions as exact action lists, without sockets or
/// receivers.
@Suite struct StreamDoorsTests {
  static let sentence = Array(NMEAChecksum.frame("PMTK605"))
  static let other = Array(NMEAChecksum.frame("PMTK000"))

  static func doors(writable: Bool = true, backlog: Int = 256 * 1024) -> StreamDoors {
    StreamDoors(settings: StreamDoors.Settings(writable: writable, backlog: backlog))
  }

  static func input(_ doors: inout StreamDoors, _ bytes: [UInt8], from id: Int)
    -> [StreamDoors.Action]
  {
    bytes.withUnsafeBytes { doors.input(from: id, $0) }
  }

  static func live(_ fix: Fix) -> ReceiverEventOrRawData {
    .event(.fix(FixUpdate(fix: fix, age: .zero, isReplay: false, arrival: .origin)))
  }

  /// A fix of a receiver that sends no NMEA (UBX only).
  static func binaryFix() -> Fix {
    var fix = ServerStateTests.fix(second: 1)
    fix.fromBinaryMessagesOnly = true
    return fix
  }

  @Test func theFirstConnectionSubscribesAndTheLastLeavingEndsIt() {
    var doors = Self.doors()
    doors.deviceAdded(1)
    #expect(doors.reconcile(1).isEmpty, "nobody connected, nobody watching")
    let (a, openedA) = doors.opened(.raw, peer: "a")
    #expect(openedA == [.subscribe(1, .reportsAndRawData)])
    let (b, openedB) = doors.opened(.raw, peer: "b")
    #expect(openedB.isEmpty, "the subscription has the raw bytes already")
    let (nmea, openedNMEA) = doors.opened(.nmea, peer: "")
    #expect(openedNMEA == [.subscribe(1, ReceiverNeed(sentences: true, rawData: true))])
    #expect(doors.closed(nmea) == [.subscribe(1, .reportsAndRawData)])
    #expect(doors.closed(a).isEmpty, "b still reads")
    #expect(doors.closed(b) == [.subscribe(1, nil)])
    #expect(doors.closed(b).isEmpty, "closed once")
    #expect(doors.isEmpty)
  }

  /// What ``ServerState`` asked stays when the stream ports come and go.
  @Test func theWatchersSubscriptionIsCombinedWithTheStreams() {
    var doors = Self.doors()
    doors.deviceAdded(1)
    #expect(doors.asked(1, .reports) == [.subscribe(1, .reports)])
    let (nmea, opened) = doors.opened(.nmea, peer: "")
    #expect(opened == [.subscribe(1, .reportsAndSentences)])
    #expect(doors.asked(1, nil).isEmpty, "the NMEA socket still wants the device")
    #expect(
      doors.asked(1, .reportsAndRawData) == [
        .subscribe(1, ReceiverNeed(sentences: true, rawData: true))
      ])
    #expect(doors.closed(nmea) == [.subscribe(1, .reportsAndRawData)])
  }

  /// The stream ports serve the first device served; when it goes, the next one.
  @Test func theStreamsFollowTheFirstDeviceServed() {
    var doors = Self.doors()
    doors.deviceAdded(1)
    doors.deviceAdded(2)
    #expect(doors.streamDevice == 1)
    let (raw, opened) = doors.opened(.raw, peer: "a")
    #expect(opened == [.subscribe(1, .reportsAndRawData)])
    #expect(doors.receiverItem(2, .rawData([1, 2])).isEmpty, "not the stream device's")
    #expect(doors.receiverItem(1, .rawData([3])) == [.send(raw, [3])])
    #expect(doors.deviceReleased(2).isEmpty)
    doors.deviceAdded(3)
    #expect(doors.deviceReleased(1) == [.subscribe(3, .reportsAndRawData)])
    #expect(doors.receiverItem(3, .rawData([4])) == [.send(raw, [4])])
  }

  /// The receiver's bytes to the raw port, its sentences to the NMEA socket, and to
  /// ``ServerState`` only what it asked for.
  @Test func eachConnectionGetsItsKindAndTheStateWhatItAsked() {
    var doors = Self.doors()
    doors.deviceAdded(1)
    _ = doors.asked(1, .reports)
    let (raw, _) = doors.opened(.raw, peer: "a")
    let (nmea, _) = doors.opened(.nmea, peer: "")
    let (nmea2, _) = doors.opened(.nmea, peer: "")
    #expect(doors.receiverItem(1, .rawData(Self.sentence)) == [.send(raw, Self.sentence)])
    #expect(
      doors.receiverItem(1, .sentences(Self.sentence)) == [
        .send(nmea, Self.sentence), .send(nmea2, Self.sentence),
      ])
    let status = ReceiverEventOrRawData.event(.status(.streaming))
    #expect(doors.receiverItem(1, status) == [.report(1, status)])
    _ = doors.asked(1, .reportsAndSentences)
    #expect(
      doors.receiverItem(1, .sentences(Self.other)) == [
        .send(nmea, Self.other), .send(nmea2, Self.other), .report(1, .sentences(Self.other)),
      ])
    #expect(doors.receiverItem(1, .rawData([7])) == [.send(raw, [7])], "raw not asked")
  }

  /// A receiver that sends no NMEA: the NMEA socket gets GGA and RMC made from each fix (and
  /// the watchers their TPV, as ``ServerState`` decides); one that sends NMEA gets none made.
  @Test func theNMEASocketGetsPseudoNMEAOfABinaryReceiver() {
    var doors = Self.doors()
    doors.deviceAdded(1)
    _ = doors.asked(1, .reports)
    let fix = Self.binaryFix()
    let sky = SatelliteView(time: fix.time, satellites: [], hdop: 0.9)
    let view = ReceiverEventOrRawData.event(.satellites(sky))
    // Nobody on the socket: nothing made, and the epoch is not one for the socket either.
    #expect(doors.receiverItem(1, Self.live(fix)) == [.report(1, Self.live(fix))])
    let (nmea, _) = doors.opened(.nmea, peer: "")
    #expect(doors.receiverItem(1, view) == [.report(1, view)])
    var expected: [UInt8] = []
    NMEAEncoder.appendGGA(fix, to: &expected)
    NMEAEncoder.appendRMC(fix, to: &expected)
    #expect(
      doors.receiverItem(1, Self.live(fix)) == [.send(nmea, expected), .report(1, Self.live(fix))]
    )
    var satellites: [UInt8] = []
    NMEAEncoder.appendGSA(fix, satellites: sky, to: &satellites)
    NMEAEncoder.appendGSV(sky, to: &satellites)
    #expect(doors.receiverItem(1, view) == [.send(nmea, satellites), .report(1, view)])
    let nmeaFix = ServerStateTests.fix(second: 2)
    #expect(doors.receiverItem(1, Self.live(nmeaFix)) == [.report(1, Self.live(nmeaFix))])
    // The raw port gets no sentences made.
    doors = Self.doors()
    doors.deviceAdded(1)
    _ = doors.opened(.raw, peer: "a")
    #expect(doors.receiverItem(1, Self.live(fix)).isEmpty)
  }

  /// One writer at a time: the first that sends, until it leaves; another is told once.
  @Test func oneWriterAtATime() {
    var doors = Self.doors()
    doors.deviceAdded(1)
    let (a, _) = doors.opened(.raw, peer: "10.0.0.1:5000")
    let (b, _) = doors.opened(.raw, peer: "10.0.0.2:6000")
    let (nmea, _) = doors.opened(.nmea, peer: "")
    #expect(Self.input(&doors, Self.sentence, from: a) == [.write(1, Self.sentence, batch: 1)])
    let taken = Array(RawWriterSlot.notice(.taken(by: "10.0.0.1:5000")).utf8)
    #expect(Self.input(&doors, Self.other, from: b) == [.send(b, taken)])
    #expect(Self.input(&doors, Self.other, from: b).isEmpty, "told once")
    #expect(Self.input(&doors, Self.other, from: nmea).isEmpty, "the NMEA socket is read-only")
    // The writer leaves with nothing waiting: not said; the slot is free for b, whose bytes
    // go once the receiver has written a's batch.
    #expect(doors.closed(a).isEmpty)
    #expect(Self.input(&doors, Self.other, from: b).isEmpty)
    #expect(doors.written(1) == [.write(1, Self.other, batch: 2)])
    #expect(doors.writer.counters.bytesForwarded == Self.sentence.count + Self.other.count)
  }

  @Test func aReadOnlyPortTellsEachSenderOnce() {
    var doors = Self.doors(writable: false)
    doors.deviceAdded(1)
    let (a, _) = doors.opened(.raw, peer: "a")
    let notice = Array(RawWriterSlot.notice(.readOnly).utf8)
    #expect(Self.input(&doors, Self.sentence, from: a) == [.send(a, notice)])
    #expect(Self.input(&doors, Self.sentence, from: a).isEmpty)
    #expect(doors.writer.counters.bytesForwarded == 0)
  }

  /// A writer that leaves with bytes that never reached the receiver is said, once.
  @Test func aWriterLeavingWithUnwrittenBytesIsSaid() {
    var doors = Self.doors()
    doors.deviceAdded(1)
    let (a, _) = doors.opened(.raw, peer: "a")
    let (b, _) = doors.opened(.raw, peer: "b")
    #expect(Self.input(&doors, Array(Self.sentence.prefix(5)), from: a).isEmpty)
    #expect(
      doors.closed(a) == [
        .log(
          "raw port: a left; 5 bytes it sent were not written to the receiver: not whole NMEA "
            + "sentences, UBX or SiRF frames (RTCM 3 is not passed on), or still waiting when "
            + "it left")
      ])
    #expect(doors.closed(b) == [.subscribe(1, nil)], "b never wrote: nothing said")
  }

  /// With no device to write to, a batch is done with at once and the next goes.
  @Test func aBatchWithNoReceiverIsDoneWithAtOnce() {
    var doors = Self.doors()
    let (a, _) = doors.opened(.raw, peer: "a")
    #expect(Self.input(&doors, Self.sentence + Self.other, from: a).isEmpty)
    doors.deviceAdded(1)
    #expect(Self.input(&doors, Self.sentence, from: a) == [.write(1, Self.sentence, batch: 2)])
  }

  /// Past the backlog, the receiver's bytes are dropped for that connection alone, counted,
  /// and said every 10 s at most with the total.
  @Test func pastTheBacklogBytesAreDroppedAndCounted() {
    var doors = Self.doors(backlog: 100)
    doors.deviceAdded(1)
    let (a, _) = doors.opened(.raw, peer: "10.0.0.1:5000")
    let (nmea, _) = doors.opened(.nmea, peer: "")
    #expect(doors.unsent(a, 60, waiting: 0, now: ClientAdmissionTests.at(0)) == .queue)
    #expect(
      doors.unsent(a, 40, waiting: 60, now: ClientAdmissionTests.at(0)) == .queue,
      "exactly the backlog")
    #expect(
      doors.unsent(a, 50, waiting: 60, now: ClientAdmissionTests.at(0))
        == .drop(
          log: "raw port: 10.0.0.1:5000 is not reading: 50 bytes dropped so far (100 bytes "
            + "wait for it at most)"))
    #expect(
      doors.unsent(nmea, 30, waiting: 90, now: ClientAdmissionTests.at(9.999)) == .drop(log: nil))
    #expect(doors.unsent(nmea, 10, waiting: 90, now: ClientAdmissionTests.at(9.999)) == .queue)
    #expect(
      doors.unsent(nmea, 20, waiting: 90, now: ClientAdmissionTests.at(10))
        == .drop(
          log: "NMEA socket: connection 2 is not reading: 100 bytes dropped so far (100 bytes "
            + "wait for it at most)"))
    #expect(doors.bytesDropped == 100)
  }

  /// Without stream ports the subscription is what the watchers asked, and nothing is sent to
  /// a stream.
  @Test func withoutPortsTheWatchersDecideAlone() {
    var doors = StreamDoors(settings: StreamDoors.Settings(ports: false))
    doors.deviceAdded(1)
    #expect(doors.streamDevice == nil)
    #expect(doors.asked(1, .reportsAndSentences) == [.subscribe(1, .reportsAndSentences)])
    #expect(doors.receiverItem(1, .rawData([1])).isEmpty)
    #expect(doors.receiverItem(1, .sentences([2])) == [.report(1, .sentences([2]))])
    #expect(doors.asked(1, nil) == [.subscribe(1, nil)])
    #expect(doors.receiverItem(1, .sentences([2])).isEmpty, "not asked any more")
  }
}
