import Glibc
import POSIX
import Testing

/// The service manager's variables read as `sd_listen_fds(3)` reads them.
@Suite("Socket activation: LISTEN_PID, LISTEN_FDS, LISTEN_FDNAMES")
struct SocketActivationTests {
  func parse(_ pid: String?, _ fds: String?, _ names: String? = nil, own: Int32 = 4242)
    -> SocketActivation.Outcome
  {
    SocketActivation.parse(listenPID: pid, listenFDs: fds, names: names, ownPID: own)
  }

  @Test("descriptors from 3 on, as many as LISTEN_FDS says, for this process only")
  func descriptorsFromThree() {
    #expect(parse(nil, nil) == .none)
    #expect(parse("4242", nil) == .none)
    #expect(
      parse("4242", "2")
        == .passed([.init(descriptor: 3, name: nil), .init(descriptor: 4, name: nil)]))
    #expect(parse("4242", "0") == .passed([]))
    // Inherited from an activated parent: not ours.
    #expect(parse("1", "2") == .otherProcess(1))
  }

  @Test("names, and an empty one as none")
  func names() {
    #expect(
      parse("4242", "3", "gpsd::raw")
        == .passed([
          .init(descriptor: 3, name: "gpsd"), .init(descriptor: 4, name: nil),
          .init(descriptor: 5, name: "raw"),
        ]))
  }

  @Test(
    "what cannot be understood is said, not guessed",
    arguments: [
      (String?.none, "1", String?.none), ("x", "1", nil), ("0", "1", nil), ("4242", "-1", nil),
      ("4242", "two", nil), ("4242", "2", "gpsd"), ("4242", "99999999999", nil),
    ])
  func invalid(_ pid: String?, _ fds: String, _ names: String?) {
    guard case .invalid(let message) = parse(pid, fds, names) else {
      Issue.record("\(String(describing: pid)) \(fds) \(String(describing: names)) accepted")
      return
    }
    #expect(message.contains("LISTEN_"))
  }

  @Test("take() unsets the variables, whoever they were meant for")
  func takeUnsets() {
    setenv("LISTEN_PID", "1", 1)
    setenv("LISTEN_FDS", "1", 1)
    setenv("LISTEN_FDNAMES", "gpsd", 1)
    #expect(SocketActivation.take() == .otherProcess(1))
    #expect(getenv("LISTEN_PID") == nil)
    #expect(getenv("LISTEN_FDS") == nil)
    #expect(getenv("LISTEN_FDNAMES") == nil)
  }
}
