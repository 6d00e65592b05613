// The CASIC message types as descriptors (``SentenceDescriptor``): how each joins the epoch
// the fix builder is building, beside the NMEA sentences of the same epoch, ranked as UBX's
// solution is (``PositionSource/binarySolution``, ``SatelliteSource/binarySatellites``).
// docs/casic.md lists what each field becomes and how an epoch ends.

/// A decoded CASIC message type read from its payload by one validating initializer.
protocol CASICDecodable: BinaryMessageDescriptor {
  init(validating payload: UnsafeRawBufferPointer) throws(CASICRejection)
}

extension CASICDecodable {
  init?(payload: UnsafeRawBufferPointer) {
    guard let message = try? Self(validating: payload) else { return nil }
    self = message
  }

  var cycleKey: CycleKey {
    CycleKey(SentenceAddress(casicClass: Self.messageClass, id: Self.messageID))
  }

  /// Only NAV-TIMEUTC carries a UTC time; the others carry the receiver's run time, which
  /// keys the epoch (``CASICMessage/add(to:emit:)``).
  var time: UTCTime? { nil }
}

extension SentenceAddress {
  /// A CASIC message by class and ID, apart from a UBX message of the same numbers (an L76K
  /// answers some UBX polls too).
  init(casicClass messageClass: UInt8, id: UInt8) {
    self.init(
      code: Self.binaryFlag | 1 << 16 | UInt64(messageClass) << 8 | UInt64(id))
  }
}

extension CASICNavPV: CASICDecodable {
  static var role: CycleRole { .position }

  /// The mode of `posValid` alone, as gpsd's msg_nav_pv: no position below 2D (a held or
  /// estimated position is no fix, and denies the epoch's fix as GGA's quality 0 does).
  func merge(into builder: inout FixBuilder) {
    builder.epoch.fix.satellitesUsed = satellitesUsed
    if let pdop = pdop.flatMap(UBXPlausible.dop) { builder.epoch.fix.pdop = pdop }
    guard let positionValidity else { return }
    let mode = positionValidity.mode
    builder.epoch.state(binary: mode)
    guard mode != .noFix else { return }
    builder.epoch.fix.quality = .gps
    builder.epoch.takeGeodeticSolution(
      position: position, altitudeMSL: altitudeMSL, altitudeHAE: altitudeHAE,
      horizontalAccuracy: horizontalAccuracy, verticalAccuracy: verticalAccuracy,
      speed: groundSpeed, course: UBXPlausible.course(heading), speedAccuracy: speedAccuracy,
      courseAccuracy: headingAccuracy)
    if let horizontalAccuracy, let verticalAccuracy {
      // Standard deviations on orthogonal axes of one solution: gpsd's `sep` for NAV-PV.
      builder.epoch.takeSphericalAccuracy(
        (horizontalAccuracy * horizontalAccuracy + verticalAccuracy * verticalAccuracy)
          .squareRoot(), from: .binarySolution)
    }
    if let velocityUp {
      builder.epoch.fix.climb = velocityUp
      if let velocityNorth, let velocityEast {
        builder.epoch.fix.velocityNED = ECEFVector(
          x: velocityNorth, y: velocityEast, z: -velocityUp)
      }
    }
  }
}

extension CASICNavTimeUTC: CASICDecodable {
  static var role: CycleRole { .timeOnly }

  /// The epoch's time when the receiver says UTC and the date are known.
  var time: UTCTime? { timestamp?.time }

  func merge(into builder: inout FixBuilder) {
    guard let timestamp else { return }
    builder.epoch.explicitDate = timestamp.date
  }
}

extension CASICNavDOP: CASICDecodable {
  static var role: CycleRole { .untimed }

  func merge(into builder: inout FixBuilder) {
    let hdop = hdop.flatMap(UBXPlausible.dop)
    let vdop = vdop.flatMap(UBXPlausible.dop)
    let pdop = pdop.flatMap(UBXPlausible.dop)
    let tdop = tdop.flatMap(UBXPlausible.dop)
    if let hdop { builder.epoch.fix.hdop = hdop }
    if let vdop { builder.epoch.fix.vdop = vdop }
    if let pdop { builder.epoch.fix.pdop = pdop }
    if let tdop { builder.epoch.fix.tdop = tdop }
    builder.epoch.viewDOP = BinaryDOP(
      gdop: nil, tdop: tdop, edop: edop.flatMap(UBXPlausible.dop),
      ndop: ndop.flatMap(UBXPlausible.dop), hdop: hdop, vdop: vdop, pdop: pdop)
  }
}

/// One layout under three IDs: a descriptor whose key is its instance's (the cycle tells
/// NAV-GLNINFO, which ends the L76K's epoch, from NAV-GPSINFO).
extension CASICNavSatellites: SentenceDescriptor {
  static var role: CycleRole { .untimed }
  var time: UTCTime? { nil }
  var cycleKey: CycleKey { CycleKey(SentenceAddress(casicClass: 0x01, id: messageID)) }

  /// Each system's list adds to the epoch's (they rank as NAV-SAT's, over GSV's).
  func merge(into builder: inout FixBuilder) {
    guard builder.epoch.takeSatellites(from: .binarySatellites) else { return }
    let system = gnssID
    for block in satellites {
      if let satellite = block.satellite(gnssID: system) { builder.epoch.addSatellite(satellite) }
    }
  }
}

extension CASICMessage {
  /// How far the run time may move within one epoch, ms (gpsd's CASIC_TOW_SLOP_MS): the
  /// fastest interval of these receivers is 200 ms.
  static let runTimeSlop: UInt32 = 10

  /// Adds the message to `builder`'s epochs through its descriptor; calls `emit` for each
  /// epoch it completes.
  ///
  /// The epoch's key is the receiver's run time, which every navigation message begins
  /// with: a message of another run time than the epoch's CASIC messages so far closes that
  /// epoch, as a new time closes an NMEA one (its last message then becomes the candidate
  /// end of the cycle, NAV-GLNINFO on an L76K, and once learned closes each epoch at once).
  /// An epoch holding only NMEA so far (a receiver sending both, NMEA first) is not closed:
  /// the binary messages of that second join it.
  @inline(__always)
  func add(to builder: inout FixBuilder, emit: (Epoch) throws -> Void) rethrows {
    if let runTime, let current = builder.epoch.casicRunTime,
      min(runTime &- current, current &- runTime) > Self.runTimeSlop
    {
      try builder.closeEpoch(endedBy: nil, emit: emit)
    }
    switch self {
    case .navPV(let m): try builder.add(m, emit: emit)
    case .navTimeUTC(let m): try builder.add(m, emit: emit)
    case .navDOP(let m): try builder.add(m, emit: emit)
    case .navSatellites(let m): try builder.add(m, emit: emit)
    case .acknowledgement: return
    }
    if let runTime, builder.epoch.hasData { builder.epoch.casicRunTime = runTime }
  }
}
