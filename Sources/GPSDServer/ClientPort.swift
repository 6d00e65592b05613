import GPSDProtocol
import POSIX

/// The gpsd port of the event loop: accepting, reading, writing and closing its clients.
/// Who may connect and who must go is ``ClientAdmission``'s to decide, what they asked
/// ``ServerState``'s; this runs their actions. On the server's thread, as the loop.
extension EventLoop {
  func acceptClients(from listener: ListeningSocket) {
    for _ in 0..<Self.acceptsPerWake {
      let descriptor: Int32?
      do {
        descriptor = try listener.accept()
      } catch {
        admit(admission.handle(.acceptFailed(reason: "\(error)"), now: .now))
        return
      }
      guard let descriptor else { return }
      let socket = ClientSocket(descriptor: descriptor)
      let arrival = (socket: socket, peer: socket.peer)
      admit(admission.handle(.arrived(peer: arrival.peer), now: .now), arrival: arrival)
    }
  }

  /// Runs ``ClientAdmission``'s actions; `arrival` is the connection an `.arrived` event was
  /// about.
  func admit(
    _ actions: [ClientAdmission.Action], arrival: (socket: ClientSocket, peer: String)? = nil
  ) {
    for action in actions {
      switch action {
      case .admit(let id):
        guard let socket = arrival?.socket else { continue }
        socket.configure(sendBufferSize: configuration.clientSendBufferSize)
        connections[id] = Connection(socket: socket)
        counters.withLock { $0.clients = connections.count }
        perform(state.clientConnected(id))
      case .refuse:
        guard let socket = arrival?.socket else { continue }
        // The notice fits any socket buffer, so the write never waits.
        _ = notice(admission.refusal(), to: socket)
        socket.closeAfterDiscardingInput()
      case .evict(let id):
        // Nothing of this client's may be queued ahead of the notice, or it would be cut short.
        if let connection = connections[id], connection.output.isEmpty {
          _ = notice(ClientAdmission.eviction, to: connection.socket)
        }
        close(id)
      case .close(let id):
        close(id)
      case .pauseAccepting:
        accepting = false
      case .resumeAccepting:
        accepting = true
      case .log(let message):
        log(message)
      }
    }
    let admitted = admission.counters
    let unexpected = admission.unexpectedEvents + state.unexpectedEvents
    counters.withLock {
      $0.clientsAccepted = admitted.accepted
      $0.clientsRefused = admitted.refused
      $0.clientsEvicted = admitted.evicted
      $0.clientsDropped = admitted.dropped
      $0.unexpectedEvents = unexpected
    }
  }

  private func notice(_ message: String, to socket: ClientSocket) -> Int? {
    var writer = JSONWriter()
    writer.error(message)
    writer.newline(crlf: true)
    return writer.bytes.withUnsafeBytes { socket.write($0) }
  }

  func readClient(_ id: ClientID, into buffer: UnsafeMutableRawBufferPointer) {
    guard let connection = connections[id] else { return }
    // A few reads per wake at most, so one chatty client cannot starve the others.
    for _ in 0..<4 {
      switch connection.socket.read(into: buffer) {
      case .received(let count):
        perform(
          state.clientInput(
            id, UnsafeRawBufferPointer(rebasing: buffer[0..<count]), wallClock: wallClockNow(),
            fixes: ReceiverFixes(receivers: receivers)))
        // Dropped while its replies were written: nothing more to read.
        guard connections[id] != nil else { return }
        admit(admission.handle(.request(id, watching: state.isWatching(id)), now: .now))
      case .wouldBlock:
        return
      case .closed:
        drop(id)
        return
      }
    }
  }

  /// Writes what the socket takes now and queues the rest; a client whose queue grows past
  /// the backlog is dropped by ``ClientAdmission``.
  func send(_ bytes: [UInt8], to id: ClientID) {
    guard let connection = connections[id] else { return }
    var offset = 0
    if connection.output.isEmpty {
      guard let written = bytes.withUnsafeBytes({ connection.socket.write($0) }) else {
        drop(id)
        return
      }
      offset = written
    }
    guard offset < bytes.count else { return }
    connection.output.append(bytes[offset...])
    admit(admission.handle(.backlog(id, waiting: connection.output.count), now: .now))
  }

  func flush(_ id: ClientID) {
    guard let connection = connections[id] else { return }
    let socket = connection.socket
    if connection.output.drain({ socket.write($0) }) == nil { drop(id) }
  }

  /// Closes a client whose peer left or whose socket failed, and tells ``ClientAdmission``.
  func drop(_ id: ClientID) {
    guard connections[id] != nil else { return }
    close(id)
    admit(admission.handle(.left(id), now: .now))
  }

  /// Closes the client's socket and tells ``ServerState`` it is gone.
  func close(_ id: ClientID) {
    guard let connection = connections.removeValue(forKey: id) else { return }
    connection.socket.close()
    counters.withLock { $0.clients = connections.count }
    perform(state.clientDisconnected(id))
  }
}
