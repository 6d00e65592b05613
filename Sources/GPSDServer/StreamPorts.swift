import Chipsets
import Glibc
import POSIX
import SerialGPS

/// The stream ports of the event loop: the raw port (`serve --raw-listen`) and the NMEA socket
/// (`--nmea-socket`). What they get, who may write and what becomes of a connection that does
/// not read is ``StreamDoors``'s to decide; this accepts, reads, writes and closes their
/// connections and runs its actions. On the server's thread, as the loop.
extension EventLoop {
  /// Linux's `POLLRDHUP` (not in Glibc's Swift overlay): the peer shut down its side. Asked
  /// for while a writer is not read, so that its leaving is seen at once all the same.
  static let peerClosed = Int16(0x2000)

  /// What to poll a stream connection for: its input unless the doors hold it back (then
  /// only its leaving), and output while some waits.
  func streamEvents(_ id: Int, _ connection: Connection) -> Int16 {
    let input = doors.reads(id) ? Int16(POLLIN) : Self.peerClosed
    return input | (connection.output.isEmpty ? 0 : Int16(POLLOUT))
  }

  func handleStream(_ id: Int, _ revents: Int16, buffer: UnsafeMutableRawBufferPointer) {
    guard revents != 0, streamConnections[id] != nil else { return }
    if revents & Int16(POLLOUT) != 0 { flushStream(id) }
    if revents & Int16(POLLIN) != 0 { readStream(id, into: buffer) }
    if revents & (Int16(POLLHUP) | Int16(POLLERR) | Int16(POLLNVAL) | Self.peerClosed) != 0,
      revents & Int16(POLLIN) == 0
    {
      closeStream(id)
    }
  }

  func acceptStreamConnections(_ listener: any Listener, _ kind: StreamKind) {
    for _ in 0..<Self.acceptsPerWake {
      let descriptor: Int32?
      do {
        descriptor = try listener.accept()
      } catch {
        log("\(kind.name): \(error)")
        return
      }
      guard let descriptor else { return }
      let socket = ClientSocket(descriptor: descriptor)
      socket.configure(sendBufferSize: configuration.clientSendBufferSize)
      let (id, actions) = doors.opened(kind, peer: socket.peer)
      streamConnections[id] = Connection(socket: socket)
      perform(actions)
    }
  }

  private func readStream(_ id: Int, into buffer: UnsafeMutableRawBufferPointer) {
    guard let connection = streamConnections[id] else { return }
    // A few reads per wake at most, and none while the doors hold it back.
    for _ in 0..<4 where doors.reads(id) {
      switch connection.socket.read(into: buffer) {
      case .received(let count):
        perform(doors.input(from: id, UnsafeRawBufferPointer(rebasing: buffer[0..<count])))
      case .wouldBlock:
        return
      case .closed:
        closeStream(id)
        return
      }
    }
  }

  /// Runs ``StreamDoors``' actions in order.
  func perform(_ actions: [StreamDoors.Action]) {
    for action in actions {
      switch action {
      case .subscribe(let id, let need):
        resubscribe(id, need)
      case .report(let id, let item):
        guard let slot = receivers[id] else { continue }
        // The family is asked only with a status: it is what the DEVICE report names.
        var family: ChipsetFamily?
        if case .event(.status) = item { family = slot.receiver.commandFamily }
        perform(state.receiverEvent(id, item, wallClock: wallClockNow(), family: family))
      case .send(let id, let bytes):
        queueStream(bytes[...], to: id)
      case .write(let id, let bytes, let batch):
        guard let receiver = receivers[id]?.receiver else {
          // Nobody to write to: the batch is done with at once.
          perform(doors.written(batch))
          continue
        }
        let inbox = self.inbox
        receiver.write(bytes) { inbox.post(.rawWritten(batch: batch)) }
      case .log(let message):
        log(message)
      }
    }
    // Most receiver items change none of them: no lock taken for those.
    let now = doors.counters
    guard now != streamCounters else { return }
    streamCounters = now
    counters.withLock {
      $0.rawClients = now.rawClients
      $0.nmeaClients = now.nmeaClients
      $0.rawBytesDropped = now.bytesDropped
      $0.rawBytesWritten = now.written.bytesForwarded
      $0.rawWriteBytesDropped = now.written.bytesDropped
    }
  }

  /// Writes what the socket takes now; the rest is queued or dropped as the doors decide.
  private func queueStream(_ bytes: ArraySlice<UInt8>, to id: Int) {
    guard let connection = streamConnections[id] else { return }
    var offset = bytes.startIndex
    if connection.output.isEmpty {
      guard let written = bytes.withUnsafeBytes({ connection.socket.write($0) }) else {
        closeStream(id)
        return
      }
      offset += written
    }
    guard offset < bytes.endIndex else { return }
    let rest = bytes[offset...]
    switch doors.unsent(id, rest.count, waiting: connection.output.count, now: .now) {
    case .queue:
      connection.output.append(rest)
    case .drop(let said):
      if let said { log(said) }
    }
  }

  private func flushStream(_ id: Int) {
    guard let connection = streamConnections[id] else { return }
    let socket = connection.socket
    if connection.output.drain({ socket.write($0) }) == nil { closeStream(id) }
  }

  func closeStream(_ id: Int) {
    guard let connection = streamConnections.removeValue(forKey: id) else { return }
    connection.socket.close()
    perform(doors.closed(id))
  }
}
