import Foundation
import Glibc
import SerialGPS
import Testing

@testable import Fleet

/// A port that takes TCP connections and never speaks MQTT (another service, a broker's
/// WebSocket port, a firewall that accepts and drops): the user is told what was seen, not
/// "no error".
@Suite("a port that accepts TCP connections and never speaks MQTT")
struct SilentPortTests {
  /// A listening socket that never accepts: the kernel completes the handshakes from its
  /// backlog, and nothing is ever said.
  final class SilentListener {
    let descriptor: Int32
    let port: UInt16

    init() throws {
      let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
      var address = sockaddr_in()
      address.sin_family = sa_family_t(AF_INET)
      address.sin_addr.s_addr = inet_addr("127.0.0.1")
      var length = socklen_t(MemoryLayout<sockaddr_in>.size)
      let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          bind(descriptor, $0, length) == 0 && listen(descriptor, 16) == 0
            && getsockname(descriptor, $0, &length) == 0
        }
      }
      guard bound else {
        Glibc.close(descriptor)
        throw POSIXError(.EADDRINUSE)
      }
      self.descriptor = descriptor
      port = UInt16(bigEndian: address.sin_port)
    }

    deinit { Glibc.close(descriptor) }
  }

  func broker(_ port: UInt16) throws -> BrokerConfiguration {
    var broker = try BrokerConfiguration(url: "mqtt://127.0.0.1:\(port)")
    broker.connectTimeout = .milliseconds(500)
    broker.reconnectDelay = .seconds(30)
    return broker
  }

  @Test("the broker check and a remote receiver's subscribers say no CONNACK came")
  func saysWhatWasSeen() async throws {
    let listener = try SilentListener()
    let broker = try broker(listener.port)
    let refusal = try await FleetBridge(configuration: .init(broker: broker)).checkBroker(
      timeout: .milliseconds(500))
    let text = try #require(refusal).description
    #expect(
      text == "mqtt://127.0.0.1:\(listener.port) accepted the TCP connection but sent no "
        + "CONNACK within 0.5 s: is it an MQTT broker, and is \(listener.port) its plaintext "
        + "(mqtt://) port?")
    #expect(refusal?.kind == .unreachable)

    var options = RemoteReceiver.Options()
    options.consumer = "silent-test"
    let remote = try RemoteReceiver(broker: broker, id: "board-1", options: options)
    let events = remote.subscribe()
    var reason: FailureReason?
    for await event in events {
      if case .status(.disconnected(let why)) = event {
        reason = why
        break
      }
    }
    events.cancel()
    #expect(reason?.message == text)
    #expect(reason?.kind == .unreachable)
    await remote.shutdown()
  }
}
