import NMEA

/// Subscriptions fed by something other than a serial receiver (a receiver across the fleet,
/// read from an MQTT broker), with the same types as ``GPSReceiver``'s: ``ReceiverEvents``,
/// ``Subscription``, the replay of the current status and the latest fresh fix to a newcomer,
/// the bounded newest-wins buffers. So app code is the same wherever the receiver is.
///
/// `attached` runs as each subscription starts and `detached` as it ends, on the caller's
/// thread (they must not block): the owner counts them in the order they come, as the power
/// policy counts a receiver's, so a subscription's start is always counted before its end.
/// Package access: the fleet module builds its public type on it.
package final class EventSource: Sendable {
  private let hub: SubscriptionHub
  private let bufferSize: Int
  private let attached: @Sendable () -> Void
  private let detached: @Sendable () -> Void

  package init(
    clock: any DriverClock, replayExpiry: Duration, bufferSize: Int,
    attached: @escaping @Sendable () -> Void, detached: @escaping @Sendable () -> Void
  ) {
    hub = SubscriptionHub(clock: clock, replayExpiry: replayExpiry)
    self.bufferSize = bufferSize
    self.attached = attached
    self.detached = detached
  }

  /// Subscribes as ``GPSReceiver/subscribe(bufferSize:)`` does; `keepAlive` lives as long as
  /// the subscription.
  package func subscribe(bufferSize: Int?, keepAlive: (any AnyObject & Sendable)?) -> ReceiverEvents
  {
    ReceiverEvents(core: makeCore(bufferSize: bufferSize, keepAlive: keepAlive))
  }

  /// Subscribes with a callback, as ``GPSReceiver/subscribe(bufferSize:_:)`` does.
  package func subscribe(
    bufferSize: Int?, keepAlive: (any AnyObject & Sendable)?,
    _ handler: @escaping @Sendable (ReceiverEvent) -> Void
  ) -> Subscription {
    Subscription(
      core: makeCore(bufferSize: bufferSize, keepAlive: keepAlive),
      handler: { item in
        if case .event(let event) = item { handler(event) }
      })
  }

  private func makeCore(bufferSize: Int?, keepAlive: (any AnyObject & Sendable)?)
    -> SubscriptionCore
  {
    let queue = SubscriberQueue(capacity: bufferSize ?? self.bufferSize)
    guard let id = hub.add(queue) else {
      queue.finish()
      return SubscriptionCore(queue: queue) {}
    }
    attached()
    return SubscriptionCore(queue: queue) { [self] in
      _ = keepAlive
      hub.remove(id)
      detached()
    }
  }

  /// A fix for every subscriber. `age` is how old it already was when it arrived (a retained
  /// report); `isReplay` marks one that is not live.
  package func publish(fix: Fix, age: Duration = .zero, isReplay: Bool = false) {
    hub.publish(fix: fix, age: age, isReplay: isReplay)
  }

  package func publish(satellites: SatelliteView) { hub.publish(satellites: satellites) }

  /// A status change; repeats of the current status are not sent again.
  package func publish(status: ReceiverStatus) { hub.publish(status: status) }

  /// Ends every subscription (each still reports `detached`) and refuses new ones.
  package func close() { hub.close() }
}
