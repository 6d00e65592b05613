import NMEA
import TimeService

/// The reader's side of a ``TimeService`` (docs/time.md, "The reader"): when each read
/// returned, what each epoch said about time, and the arrival of each epoch's first byte.
///
/// One per connection, owned by the reader thread. A receiver without a time service has
/// none, and its reader pays one `nil` check per read and per event.
struct ReaderTimekeeping {
  let service: TimeService
  private var timeline: ReadTimeline
  private var collector = EpochTimeCollector()

  /// When reading starts on `connection`: the service's PPS source starts listening too
  /// (``TimeService/portOpened(line:carrierDetectDescriptor:)``), until ``connectionClosed()``.
  init(service: TimeService, connection: any ReceiverConnection) {
    self.service = service
    let line = connection.lineTiming
    timeline = ReadTimeline(timing: line)
    service.portOpened(line: line, carrierDetectDescriptor: connection.carrierDetectDescriptor)
  }

  /// A read returned `count` bytes at `time` (`CLOCK_REALTIME`, taken as soon as it returned).
  mutating func readReturned(count: Int, at time: PosixTime) {
    timeline.recordRead(count: count, at: time)
  }

  /// Takes every decoder event; an epoch goes to the service with its first byte's arrival.
  /// A u-blox `UBX-TIM-TP` announces the next pulse's quantisation error, dated by the read
  /// that brought its last byte.
  mutating func observe(_ event: DecoderEvent) {
    if case .ubxMessage(.timTP(let message)) = event {
      guard timeline.streamOffset > 0,
        let arrival = timeline.arrival(ofByteAt: timeline.streamOffset - 1),
        let announcement = PulseQuantisation(message, announced: arrival.time)
      else { return }
      service.pulseAnnounced(announcement)
      return
    }
    guard let time = collector.observe(event), case .epoch(let epoch) = event else { return }
    let arrival = epoch.firstByteOffset.flatMap { timeline.arrival(ofByteAt: $0) }
    service.epoch(time, firstByte: arrival)
  }

  /// The connection is closing: trust starts over with the next one, and the PPS source
  /// stops (its duplicate of the port's descriptor closed before the port is).
  func connectionClosed() {
    service.receiverClosed()
  }
}
