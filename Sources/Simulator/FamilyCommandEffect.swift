/// What a simulated chipset family made of one command, for the families whose command
/// handling lives in a file of its own (``CASICModel``, ``AirohaModel``): the answer, the
/// power state the chip is left in and the restart or aiding it took. ``ReceiverModel``
/// carries the effect out, in this order: replies, restart or power change, aiding.
struct FamilyCommandEffect: Sendable, Hashable {
  /// What the receiver did about the command (acknowledged, rejected, carried out …).
  var outcome: InputOutcome
  /// What the chip sends back, in order (acknowledgements, query answers).
  var replies: [[UInt8]] = []
  /// The power state the command leaves the chip in; `nil`: unchanged.
  var power: SimulatedPowerState?
  /// A restart: the chip boots again after clearing what this kind of start clears.
  var restart: StartKind?
  /// Aiding the chip took (a reference time or position).
  var aiding: AidingReceived.Content?

  /// Counts toward ``ReceiverModel/acknowledgements`` and ``ReceiverModel/rejections``.
  var countsAsAcknowledgement: Bool { outcome == .acknowledged }
  var countsAsRejection: Bool { outcome == .rejected }
}
