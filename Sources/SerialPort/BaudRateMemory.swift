/// The rate that last worked for each device, so that ``Autobaud`` tries it first next time.
///
/// A plain value the caller keeps (in memory only) and passes to ``Autobaud`` by `inout`.
/// Keys are device paths as given to ``Autobaud``; a caller that follows a receiver across
/// renames (`/dev/ttyUSB0` today, `/dev/ttyUSB1` after a replug) should pass a stable path
/// such as one under `/dev/serial/by-id/`.
public struct BaudRateMemory: Hashable, Sendable {
  private var rates: [String: BaudRate] = [:]

  public init() {}

  /// The rate that last worked for `device`, if any.
  public func rate(for device: String) -> BaudRate? { rates[device] }

  /// Records that `rate` worked for `device`.
  public mutating func remember(_ rate: BaudRate, for device: String) { rates[device] = rate }

  /// Forgets `device`'s rate, e.g. after the user reconfigured the receiver.
  public mutating func forget(_ device: String) { rates[device] = nil }

  /// The order in which to try rates on `device`: the remembered rate first (even when it is
  /// not among `candidates`), then `candidates` in their order, without repeats.
  public func searchOrder(for device: String, candidates: [BaudRate]) -> [BaudRate] {
    var order: [BaudRate] = []
    for rate in [rates[device]].compactMap({ $0 }) + candidates where !order.contains(rate) {
      order.append(rate)
    }
    return order
  }
}
