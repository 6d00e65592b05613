// libm's functions where no C library module can be imported: Embedded Swift (a board's
// firmware, or the 32-bit check of scripts/arm-check.sh) has no Glibc or Darwin module, so the
// few the decoders use are declared by their C names and linked from the board's libm
// (`-lm`). Hosted builds import them from Glibc or Darwin in the files that use them.

#if !canImport(Glibc) && !canImport(Darwin)
  @_extern(c, "atan2") func atan2(_ y: Double, _ x: Double) -> Double
  @_extern(c, "sin") func sin(_ x: Double) -> Double
  @_extern(c, "cos") func cos(_ x: Double) -> Double
#endif
