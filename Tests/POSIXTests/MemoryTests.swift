import Glibc
import POSIX
import Testing

/// Resident kB of this process's executable, by mapping kind, from /proc/self/smaps: the
/// executable code ("r-xp") and the rest of its mappings (data, relocated data).
func executableResident() throws -> (code: Int, data: Int) {
  var buffer = [CChar](repeating: 0, count: 4096)
  let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
  let executable = String(
    decoding: buffer.prefix(max(0, length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
  let smaps = String(decoding: try FileDescriptor.contents(of: "/proc/self/smaps"), as: UTF8.self)
  var code = 0
  var data = 0
  var current: (isExecutable: Bool, isCode: Bool)?
  for line in smaps.split(separator: "\n") {
    let fields = line.split(separator: " ", omittingEmptySubsequences: true)
    if let first = fields.first, first.contains("-"), fields.count >= 5 {
      let path = fields.count >= 6 ? String(fields[5]) : ""
      current = (path == executable, fields[1] == "r-xp")
    } else if fields.first == "Rss:", let current, current.isExecutable, fields.count >= 2 {
      let kilobytes = Int(fields[1]) ?? 0
      if current.isCode { code += kilobytes } else { data += kilobytes }
    }
  }
  return (code, data)
}

/// Written before the release and read after: data pages must keep what they hold.
nonisolated(unsafe) var writtenBeforeRelease = 0

@Suite("ResidentMemory")
struct MemoryTests {
  @Test("the executable's code leaves the resident set and faults back; its data stays")
  func releaseExecutableCode() throws {
    writtenBeforeRelease = 0x5EED
    let before = try executableResident()
    #expect(before.code > 256, "the test executable has \(before.code) kB of code resident")
    let released = try ResidentMemory.releaseExecutableCode()
    let after = try executableResident()
    #expect(released >= before.code * 1024, "advised \(released) bytes")
    // Reading smaps runs code again (it faults back), but far less than was resident.
    #expect(after.code < before.code / 2, "code resident \(before.code) → \(after.code) kB")
    #expect(after.data >= before.data * 9 / 10, "data \(before.data) → \(after.data) kB")
    #expect(writtenBeforeRelease == 0x5EED)
    // Code that ran before runs again.
    #expect(try executableResident().code > 0)
  }
}
