import Discovery
import POSIX

/// The hotplug events of one device the server found by discovery, for the
/// `DiscoveringConnector` of its receiver: the server follows discovery once for every device,
/// and each receiver follows its own device through the same state machine as a receiver
/// that follows discovery itself (`FollowingState`), which decides what may be written to it.
///
/// The connector's stream starts as discovery's does, with the device present and
/// `.enumerationComplete`; the server's thread then sends what changes about that device. A
/// stream ends when its receiver stops watching (it is shut down when the server releases it).
final class HotplugFeed: Sendable {
  private struct State {
    var device: SerialDevice
    var streams: [Int: AsyncStream<HotplugEvent>.Continuation] = [:]
    var nextStream = 0
  }

  private let state: Locked<State>

  init(_ device: SerialDevice) { state = Locked(State(device: device)) }

  /// A new stream of the device's events, from its state now.
  func events() -> AsyncStream<HotplugEvent> {
    let (stream, continuation) = AsyncStream.makeStream(of: HotplugEvent.self)
    state.withLock { state in
      // Nobody iterates the new stream yet: these only fill its buffer, ahead of anything
      // sent after the lock is released.
      continuation.yield(.added(state.device))
      continuation.yield(.enumerationComplete)
      let key = state.nextStream
      state.nextStream += 1
      state.streams[key] = continuation
      continuation.onTermination = { [weak self] _ in
        self?.state.withLock { _ = $0.streams.removeValue(forKey: key) }
      }
    }
    return stream
  }

  /// Passes on an event of the device (`.changed`) to every stream.
  func send(_ event: HotplugEvent) {
    let streams = state.withLock { state -> [AsyncStream<HotplugEvent>.Continuation] in
      switch event {
      case .added(let device), .changed(let device): state.device = device
      case .removed, .enumerationComplete: break
      }
      return Array(state.streams.values)
    }
    for stream in streams { stream.yield(event) }
  }
}
