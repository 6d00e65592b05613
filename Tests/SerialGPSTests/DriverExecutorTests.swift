import POSIX
import Testing

@testable import SerialGPS

/// The thread a task runs on, by the kernel's name for it.
private func currentThreadName() -> String {
  let bytes = (try? FileDescriptor.contents(of: "/proc/thread-self/comm")) ?? []
  return String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: "\n")
}

extension String {
  fileprivate func trimmingCharacters(in set: Character) -> String {
    var text = self
    while text.last == set { text.removeLast() }
    return text
  }
}

private struct Refused: Error, Equatable {}

/// The one way the package starts a task: `DriverExecutor.task`, on the driver thread.
@Suite struct DriverExecutorTests {
  @Test func aTaskAndItsChildrenRunOnTheDriverThread() async {
    let names = await DriverExecutor.task { () -> [String] in
      var names = [currentThreadName()]
      await withTaskGroup(of: String.self) { group in
        for _ in 0..<4 { group.addTask { currentThreadName() } }
        for await name in group { names.append(name) }
      }
      async let child = currentThreadName()
      names.append(await child)
      // After a sleep on the driver's clock, still there.
      try? await SystemClock().sleep(for: .milliseconds(5))
      names.append(currentThreadName())
      return names
    }.value
    #expect(names.count == 7)
    #expect(names.allSatisfy { $0 == "serialgps-exec" }, "\(names)")
  }

  @Test func aThrowingTaskRunsThereAndHandsOnItsError() async {
    let task = DriverExecutor.task { () throws -> String in
      let name = currentThreadName()
      if name == "serialgps-exec" { throw Refused() }
      return name
    }
    await #expect(throws: Refused.self) { try await task.value }
  }
}
