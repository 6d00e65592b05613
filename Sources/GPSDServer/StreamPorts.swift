import Glibc
import POSIX
import SerialGPS

/// The stream ports of the event loop: the raw port (`serve --raw-listen`, its writer
/// ``RawWriteQueue``) and the NMEA socket (`--nmea-socket`), each connection a continuous
/// subscription of the first receiver served. On the server's thread, as the loop.
extension EventLoop {
  /// Linux's `POLLRDHUP` (not in Glibc's Swift overlay): the peer shut down its side. Asked
  /// for while a writer is not read, so that its leaving is seen at once all the same.
  static let peerClosed = Int16(0x2000)

  /// The device whose output the stream ports serve: the first one served (named first, or
  /// found first) while it is.
  var streamDevice: DeviceID? { streamPorts.isEmpty ? nil : receivers.keys.min() }

  func hasStreamConnections(_ kind: StreamKind) -> Bool {
    streamConnections.values.contains { $0.stream == kind }
  }

  /// What to poll a stream connection for: its input unless it is a writer whose frames fill
  /// the queue (then only its leaving), and output while some waits.
  func streamEvents(_ id: Int, _ connection: Connection) -> Int16 {
    let input = rawWriter.reads(id) ? Int16(POLLIN) : Self.peerClosed
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
      let id = nextStreamID
      nextStreamID += 1
      let wanted = hasStreamConnections(kind)
      // A Unix socket's peer has no address: it is named by its number.
      let peer = kind == .raw ? socket.peer : "connection \(id)"
      streamConnections[id] = Connection(socket: socket, peer: peer, stream: kind)
      countStreamConnections()
      if !wanted, let device = streamDevice { updateSubscription(device) }
    }
  }

  private func countStreamConnections() {
    let raw = streamConnections.values.count { $0.stream == .raw }
    let nmea = streamConnections.count - raw
    counters.withLock {
      $0.rawClients = raw
      $0.nmeaClients = nmea
    }
  }

  private func readStream(_ id: Int, into buffer: UnsafeMutableRawBufferPointer) {
    guard let connection = streamConnections[id] else { return }
    // A few reads per wake at most, and none once a writer's queue is full.
    for _ in 0..<4 where rawWriter.reads(id) {
      switch connection.socket.read(into: buffer) {
      case .received(let count):
        // The NMEA socket's readers (GeoClue) send nothing; what one sends goes nowhere.
        guard connection.stream == .raw else { continue }
        performRawWrite(
          rawWriter.input(
            from: id, peer: connection.peer, UnsafeRawBufferPointer(rebasing: buffer[0..<count])))
      case .wouldBlock:
        return
      case .closed:
        closeStream(id)
        return
      }
    }
  }

  /// Runs ``RawWriteQueue``'s actions: a batch to the stream device (its end posted back to
  /// the loop), a refusal to its connection.
  func performRawWrite(_ actions: [RawWriteQueue.Action]) {
    for action in actions {
      switch action {
      case .write(let bytes, let batch):
        guard let device = streamDevice, let receiver = receivers[device]?.receiver else {
          // Nobody to write to: the batch is done with at once.
          performRawWrite(rawWriter.written(batch))
          continue
        }
        let inbox = self.inbox
        receiver.write(bytes) { inbox.post(.rawWritten(batch: batch)) }
      case .refuse(let id, let refusal):
        queueStream(Array(RawWriterSlot.notice(refusal).utf8)[...], to: id)
      }
    }
    let counts = rawWriter.counters
    counters.withLock {
      $0.rawBytesWritten = counts.bytesForwarded
      $0.rawWriteBytesDropped = counts.bytesDropped
    }
  }

  /// The receiver's bytes, or its sentences, to every connection of that kind.
  func sendStream(_ bytes: [UInt8], to kind: StreamKind) {
    for (id, connection) in streamConnections where connection.stream == kind {
      queueStream(bytes[...], to: id)
    }
  }

  /// Writes what the socket takes now and queues the rest, up to
  /// ``GPSDServer/Configuration/rawBacklog``: past it the bytes are dropped for that
  /// connection alone (counted, logged every 10 s at most), so that one that does not read
  /// never holds the others or the receiver back, and stays connected.
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
    guard connection.output.count + rest.count <= configuration.rawBacklog else {
      let total = counters.withLock { statistics -> Int in
        statistics.rawBytesDropped += rest.count
        return statistics.rawBytesDropped
      }
      if rawDropLog.allow(now: .now) != nil {
        log(
          "\(connection.stream?.name ?? "stream"): \(connection.peer) is not reading: \(total) "
            + "bytes dropped so far (\(configuration.rawBacklog) bytes wait for it at most)")
      }
      return
    }
    connection.output.append(rest)
  }

  private func flushStream(_ id: Int) {
    guard let connection = streamConnections[id] else { return }
    let socket = connection.socket
    if connection.output.drain({ socket.write($0) }) == nil { closeStream(id) }
  }

  /// Closes a stream connection; a writer's frames still waiting go with it.
  func closeStream(_ id: Int) {
    guard let connection = streamConnections.removeValue(forKey: id) else { return }
    connection.socket.close()
    if connection.stream == .raw {
      let wrote = rawWriter.slot.writer == id
      rawWriter.left(id)
      performRawWrite([])
      let dropped = rawWriter.counters.bytesDropped - rawDropsSaid
      if wrote && dropped > 0 {
        rawDropsSaid = rawWriter.counters.bytesDropped
        log(
          "raw port: \(connection.peer) left; \(dropped) bytes it sent were not written to the "
            + "receiver: not whole NMEA sentences, UBX or SiRF frames (RTCM 3 is not passed on), "
            + "or still waiting when it left")
      }
    }
    countStreamConnections()
    if let kind = connection.stream, !hasStreamConnections(kind), let device = streamDevice {
      updateSubscription(device)
    }
  }
}
