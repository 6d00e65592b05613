import NMEA
import SerialGPS
import Testing

@testable import NTRIP

/// A 3D fix at 12:00:`second`, for the GGA the session sends.
func roverFix(second: UInt8 = 0) -> Fix {
  var fix = Fix()
  fix.mode = .threeD
  fix.date = UTCDate(year: 2026, month: 12, day: 7)
  fix.time = UTCTime(hour: 12, minute: 0, second: second)
  fix.position = Position(
    latitude: Coordinate(
      degrees: 47, scaledMinutes: 2_261_418, fractionDigits: 5, isNegative: false),
    longitude: Coordinate(
      degrees: 8, scaledMinutes: 3_250_206, fractionDigits: 5, isNegative: false))
  fix.altitudeMSL = 408.3
  fix.satellitesUsed = 8
  return fix
}

func gga(_ fix: Fix) -> [UInt8] {
  var out: [UInt8] = []
  NMEAEncoder.appendGGA(fix, to: &out)
  return out
}

@Suite("NTRIPSession: the client's decisions, as exact action lists on a manual clock")
struct NTRIPSessionTests {
  let caster = NTRIPCaster(
    host: "127.0.0.1", port: 2101, mountpoint: "MOUNT",
    credentials: NTRIPCredentials(user: "rover", password: "secret"))
  let clock = ManualClock()

  func session(positionInterval: Duration? = .seconds(10)) -> NTRIPSession {
    var configuration = NTRIPSession.Configuration(caster: caster)
    configuration.positionInterval = positionInterval
    configuration.silenceTimeout = .seconds(30)
    configuration.reconnectDelay = .seconds(1)
    configuration.maximumReconnectDelay = .seconds(8)
    return NTRIPSession(configuration: configuration)
  }

  var request: [UInt8] { caster.request(userAgent: "NTRIP SerialGPS") }
  var now: DriverInstant { clock.now }

  @Test("asleep: nothing; powered: connect, request, stream, GGA; standby: disconnect")
  func lifecycle() {
    var session = session()
    #expect(session.tick(at: now, fix: nil) == [])
    #expect(session.power(false, at: now) == [])
    #expect(session.power(true, at: now) == [.report(.connecting(caster)), .connect])
    clock.advance(by: .milliseconds(40))
    #expect(session.connected(at: now) == [.send(request)])
    clock.advance(by: .milliseconds(60))
    let frame = rtcmFrame(20)
    let fix = roverFix()
    #expect(
      session.received(Array("ICY 200 OK\r\n".utf8)[...] + frame[...], at: now, fix: fix) == [
        .report(.streaming(caster, version: 1, chunked: false)), .forward(frame),
        .send(gga(fix)),
      ])
    // The next GGA is due 10 s later, not sooner.
    clock.advance(by: .milliseconds(9_999))
    #expect(session.received(frame[...], at: now, fix: fix) == [.forward(frame)])
    #expect(session.tick(at: now, fix: fix) == [])
    clock.advance(by: .milliseconds(1))
    #expect(session.tick(at: now, fix: fix) == [.send(gga(fix))])
    clock.advance(by: .milliseconds(500))
    #expect(
      session.power(false, at: now) == [
        .disconnect, .report(.ended(nil, after: .milliseconds(10_560), retryIn: nil)),
      ])
    #expect(session.tick(at: now + .seconds(60), fix: fix) == [])
    #expect(session.nextDeadline == nil)
    #expect(session.statistics.connections == 1)
    #expect(session.statistics.framesReceived == 2)
    #expect(session.statistics.positionsSent == 2)
    #expect(session.statistics.connectedTime == .milliseconds(10_560))
  }

  @Test(
    "statuses: a power-on connects at once, a command's failure changes nothing, asleep no deadline"
  )
  func followsStatuses() {
    var session = session(positionInterval: nil)
    let failure = FailureReason(.other, "no acknowledgement")
    #expect(session.receiverStatus(.poweredOff, at: now) == [])
    #expect(session.nextDeadline == nil)
    #expect(
      session.receiverStatus(
        .commandsWithheld(.init(moment: .powerOn, identification: nil)), at: now) == [])
    #expect(session.nextDeadline == nil)
    #expect(
      session.receiverStatus(.poweringOn, at: now) == [.report(.connecting(caster)), .connect])
    #expect(session.nextDeadline == now + .seconds(30))
    clock.advance(by: .milliseconds(20))
    #expect(session.connected(at: now) == [.send(request)])
    #expect(session.receiverStatus(.noFix, at: now) == [])
    #expect(session.receiverStatus(.commandFailed(reason: failure), at: now) == [])
    #expect(session.receiverStatus(.streaming, at: now) == [])
    clock.advance(by: .milliseconds(980))
    #expect(
      session.receiverStatus(.poweredOff, at: now) == [
        .disconnect, .report(.ended(nil, after: .milliseconds(980), retryIn: nil)),
      ])
    #expect(session.nextDeadline == nil)
    // A receiver that comes back powered connects again at once; one that goes away while
    // powered is asleep as far as corrections go.
    #expect(
      session.receiverStatus(.reconnected, at: now) == [.report(.connecting(caster)), .connect])
    #expect(
      session.receiverStatus(.disconnected(reason: failure), at: now) == [
        .disconnect, .report(.ended(nil, after: nil, retryIn: nil)),
      ])
    #expect(session.nextDeadline == nil)
    #expect(session.statistics.connections == 1)
  }

  @Test("no fix yet: no GGA until there is one, looked for each second")
  func positionWaitsForFix() {
    var session = session()
    _ = session.power(true, at: now)
    _ = session.connected(at: now)
    #expect(
      session.received(Array("ICY 200 OK\r\n".utf8)[...], at: now, fix: nil) == [
        .report(.streaming(caster, version: 1, chunked: false))
      ])
    #expect(session.nextDeadline == now + .seconds(1))
    clock.advance(by: .seconds(1))
    #expect(session.tick(at: now, fix: nil) == [])
    clock.advance(by: .seconds(1))
    #expect(session.tick(at: now, fix: roverFix()) == [.send(gga(roverFix()))])
    #expect(session.nextDeadline == now + .seconds(10))
  }

  @Test("a caster silent for 30 s is dropped and reconnected after the backoff, doubling")
  func silenceAndBackoff() {
    var session = session(positionInterval: nil)
    _ = session.power(true, at: now)
    _ = session.connected(at: now)
    _ = session.received(Array("ICY 200 OK\r\n".utf8)[...], at: now, fix: nil)
    clock.advance(by: .milliseconds(29_999))
    #expect(session.tick(at: now, fix: nil) == [])
    clock.advance(by: .milliseconds(1))
    #expect(
      session.tick(at: now, fix: nil) == [
        .disconnect,
        .report(.ended(.silent(.seconds(30)), after: .seconds(30), retryIn: .seconds(1))),
      ])
    clock.advance(by: .milliseconds(999))
    #expect(session.tick(at: now, fix: nil) == [])
    clock.advance(by: .milliseconds(1))
    #expect(session.tick(at: now, fix: nil) == [.report(.connecting(caster)), .connect])
    // Refused: the second failure waits twice as long.
    #expect(
      session.connectionEnded(at: now, reason: "Connection refused") == [
        .report(
          .ended(.connectionFailed("Connection refused"), after: nil, retryIn: .seconds(2)))
      ])
    #expect(session.nextDeadline == now + .seconds(2))
    // Asleep meanwhile: no attempt.
    #expect(session.power(false, at: now) == [])
    clock.advance(by: .seconds(5))
    #expect(session.tick(at: now, fix: nil) == [])
    // Powered again: at once, and the backoff starts over.
    #expect(session.power(true, at: now) == [.report(.connecting(caster)), .connect])
    #expect(
      session.connectionEnded(at: now, reason: "Connection refused") == [
        .report(
          .ended(.connectionFailed("Connection refused"), after: nil, retryIn: .seconds(1)))
      ])
  }

  @Test("a wrong password stops the client until the receiver is next powered")
  func unauthorizedStops() {
    var session = session()
    _ = session.power(true, at: now)
    _ = session.connected(at: now)
    let failure = NTRIPFailure.unauthorized(mountpoint: "MOUNT")
    #expect(
      session.received(
        Array("HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic\r\n\r\n".utf8)[...],
        at: now, fix: nil)
        == [.disconnect, .report(.ended(failure, after: .zero, retryIn: nil))])
    #expect(session.stoppedBy == failure)
    clock.advance(by: .seconds(3600))
    #expect(session.tick(at: now, fix: nil) == [])
    #expect(session.power(false, at: now) == [])
    #expect(session.power(true, at: now) == [.report(.connecting(caster)), .connect])
  }

  @Test("a status line alone, then the close (RTKLIB's 401), is still that status")
  func statusLineThenClose() {
    var session = session()
    _ = session.power(true, at: now)
    _ = session.connected(at: now)
    #expect(
      session.received(Array("HTTP/1.0 401 Unauthorized\r\n".utf8)[...], at: now, fix: nil)
        == [])
    let failure = NTRIPFailure.unauthorized(mountpoint: "MOUNT")
    #expect(
      session.connectionEnded(at: now, reason: nil)
        == [.report(.ended(failure, after: .zero, retryIn: nil))])
  }

  @Test("a source table names the mountpoints offered")
  func sourceTable() {
    var session = session()
    _ = session.power(true, at: now)
    _ = session.connected(at: now)
    let table =
      "SOURCETABLE 200 OK\r\nServer: test\r\nContent-Type: text/plain\r\n\r\n"
      + "CAS;caster;2101;x;y;0;DEU;0;0;0.0.0.0;0;http://x\r\n"
      + "STR;NEAR;Near;RTCM 3.3;1005(10);2;GPS;NET;DEU;47.0;8.0;1;0;sNTRIP;none;B;N;0;\r\n"
      + "STR;FAR;Far;RTCM 3.3;1005(10);2;GPS;NET;DEU;48.0;9.0;1;0;sNTRIP;none;B;N;0;\r\n"
      + "ENDSOURCETABLE\r\n"
    let failure = NTRIPFailure.mountpointNotOffered(
      mountpoint: "MOUNT", offered: ["NEAR", "FAR"], more: 0)
    #expect(
      session.received(Array(table.utf8)[...], at: now, fix: nil)
        == [.disconnect, .report(.ended(failure, after: .zero, retryIn: nil))])
    #expect(
      failure.description
        == "the caster does not offer the mountpoint MOUNT; it offers: NEAR, FAR")
  }

  @Test("a redirect is not followed and says where it points")
  func redirect() {
    var session = session()
    _ = session.power(true, at: now)
    _ = session.connected(at: now)
    let failure = NTRIPFailure.redirected(status: 302, location: "http://elsewhere:2101/MOUNT")
    #expect(
      session.received(
        Array("HTTP/1.1 302 Found\r\nLocation: http://elsewhere:2101/MOUNT\r\n\r\n".utf8)[...],
        at: now, fix: nil)
        == [.disconnect, .report(.ended(failure, after: .zero, retryIn: nil))])
  }

  @Test("NTRIP 2 chunked: frames split across chunks come out whole; a bad CRC is refused")
  func chunkedStream() {
    var session = session(positionInterval: nil)
    _ = session.power(true, at: now)
    _ = session.connected(at: now)
    let good = rtcmFrame(25, seed: 1)
    var bad = rtcmFrame(25, seed: 2)
    bad[10] ^= 1
    let body = good + bad + good
    let header = "HTTP/1.1 200 OK\r\nNtrip-Version: Ntrip/2.0\r\nTransfer-Encoding: chunked\r\n\r\n"
    let chunks =
      "a\r\n".utf8 + body[0..<10] + "\r\n".utf8 + "53\r\n".utf8 + body[10...] + "\r\n".utf8
    var actions: [NTRIPSession.Action] = []
    for byte in Array(header.utf8) + Array(chunks) {
      actions += session.received([byte], at: now, fix: nil)
    }
    #expect(
      actions == [
        .report(.streaming(caster, version: 2, chunked: true)), .forward(good), .forward(good),
      ])
    #expect(session.statistics.framesRefused == 1)
  }

  @Test("the request: NTRIP 2 and NTRIP 1, with Basic authentication")
  func requests() throws {
    #expect(
      String(decoding: request, as: UTF8.self)
        == "GET /MOUNT HTTP/1.1\r\nHost: 127.0.0.1:2101\r\nNtrip-Version: Ntrip/2.0\r\n"
        + "User-Agent: NTRIP SerialGPS\r\nAuthorization: Basic cm92ZXI6c2VjcmV0\r\n"
        + "Connection: close\r\n\r\n")
    let one = try NTRIPCaster(url: "ntrip1://a%40b:p%3Aw@caster.example:2102/RTCM3")
    #expect(one.credentials == NTRIPCredentials(user: "a@b", password: "p:w"))
    #expect(one.description == "ntrip1://a@b:***@caster.example:2102/RTCM3")
    #expect(
      String(decoding: one.request(userAgent: "NTRIP x"), as: UTF8.self)
        == "GET /RTCM3 HTTP/1.0\r\nHost: caster.example:2102\r\nUser-Agent: NTRIP x\r\n"
        + "Authorization: Basic YUBiOnA6dw==\r\nConnection: close\r\n\r\n")
    #expect(Base64.encode([]) == "")
    #expect(Base64.encode(Array("f".utf8)) == "Zg==")
    #expect(Base64.encode(Array("fo".utf8)) == "Zm8=")
    #expect(Base64.encode(Array("foobar".utf8)) == "Zm9vYmFy")
  }

  @Test("addresses that cannot be used say what to write")
  func badAddresses() {
    for url in [
      "http://x/M", "ntrip://host", "ntrip://host/", "ntrip://host:0/M", "ntrip://:2101/M",
    ] {
      #expect(throws: NTRIPAddressError.self) { try NTRIPCaster(url: url) }
    }
    #expect(NTRIPCredentials(text: "user:pa:ss\nignored") == .init(user: "user", password: "pa:ss"))
    #expect(NTRIPCredentials(text: ":nouser") == nil)
    #expect("\(NTRIPCredentials(user: "u", password: "secret"))" == "u:***")
  }
}
