import POSIX

extension SerialPort {
  /// A duplicate of the port's descriptor for a thread that waits on the port's modem lines
  /// (`TIOCMIWAIT` for a PPS on DCD), which the caller owns and must close before the port
  /// closes (the tty stays open while it is). `nil` once the port is closed, or when no
  /// descriptor is left.
  public func duplicateDescriptor() -> CInt? {
    try? withOpenDescriptors(.modemLines) { () throws(SerialPortError) -> CInt? in
      try? io.descriptor.duplicate().rawValue
    } ?? nil
  }
}
