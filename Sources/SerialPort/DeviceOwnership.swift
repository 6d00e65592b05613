import Glibc

/// Who owns a device node and who may open it: what a permission error needs to tell the user
/// which group to join.
public struct DeviceOwnership: Hashable, Sendable {
  /// The owning user's id and name (nil when the user database has no entry).
  public let ownerID: UInt32
  public let ownerName: String?
  /// The owning group's id and name (nil when the group database has no entry).
  public let groupID: UInt32
  public let groupName: String?
  /// The file type and permission bits (`st_mode`).
  public let mode: UInt32
  /// Whether this process has the group among its groups (`getegid`, `getgroups`).
  public let callerIsInGroup: Bool

  public init(
    ownerID: UInt32, ownerName: String?, groupID: UInt32, groupName: String?, mode: UInt32,
    callerIsInGroup: Bool
  ) {
    self.ownerID = ownerID
    self.ownerName = ownerName
    self.groupID = groupID
    self.groupName = groupName
    self.mode = mode
    self.callerIsInGroup = callerIsInGroup
  }

  /// Whether the group permission bits allow reading and writing.
  public var groupCanReadAndWrite: Bool { mode & 0o060 == 0o060 }

  /// `ls -l` style: "crw-rw---- root:dialout".
  public var summary: String {
    "\(Self.modeString(mode)) \(ownerName ?? String(ownerID)):\(groupName ?? String(groupID))"
  }

  /// Looks the node up with `stat`, and its owner and group in the user and group databases.
  /// Nil when `stat` fails (a directory on the way may be what denies access).
  public static func inspect(path: String) -> DeviceOwnership? {
    var status = stat()
    guard stat(path, &status) == 0 else { return nil }
    return DeviceOwnership(
      ownerID: status.st_uid, ownerName: userName(status.st_uid), groupID: status.st_gid,
      groupName: groupName(status.st_gid), mode: status.st_mode,
      callerIsInGroup: processIsInGroup(status.st_gid))
  }

  static func groupName(_ gid: gid_t) -> String? {
    var group = Glibc.group()
    var result: UnsafeMutablePointer<Glibc.group>? = nil
    return nameFromDatabase { buffer, capacity in
      let status = getgrgid_r(gid, &group, buffer, capacity, &result)
      return (status, result.flatMap { $0.pointee.gr_name.map { String(cString: $0) } })
    }
  }

  static func userName(_ uid: uid_t) -> String? {
    var user = passwd()
    var result: UnsafeMutablePointer<passwd>? = nil
    return nameFromDatabase { buffer, capacity in
      let status = getpwuid_r(uid, &user, buffer, capacity, &result)
      return (status, result.flatMap { $0.pointee.pw_name.map { String(cString: $0) } })
    }
  }

  /// Runs a reentrant look-up in the user or group database (`getpwuid_r`, `getgrgid_r`) with
  /// a scratch buffer that grows while the look-up says it is too small (ERANGE), up to
  /// 1 MiB; the name it found, or nil.
  private static func nameFromDatabase(
    _ lookUp: (UnsafeMutablePointer<CChar>, Int) -> (status: CInt, name: String?)
  ) -> String? {
    var capacity = 1024
    while capacity <= 1 << 20 {
      let answer = withUnsafeTemporaryAllocation(of: CChar.self, capacity: capacity) { buffer in
        lookUp(buffer.baseAddress!, buffer.count)
      }
      if answer.status == ERANGE {
        capacity *= 4
        continue
      }
      return answer.name
    }
    return nil
  }

  static func processIsInGroup(_ gid: gid_t) -> Bool {
    if getegid() == gid { return true }
    let count = getgroups(0, nil)
    guard count > 0 else { return false }
    var groups = [gid_t](repeating: 0, count: Int(count))
    let filled = getgroups(count, &groups)
    return filled > 0 && groups.prefix(Int(filled)).contains(gid)
  }

  static func modeString(_ mode: UInt32) -> String {
    let type: Character =
      switch mode & UInt32(S_IFMT) {
      case UInt32(S_IFCHR): "c"
      case UInt32(S_IFBLK): "b"
      case UInt32(S_IFDIR): "d"
      case UInt32(S_IFLNK): "l"
      case UInt32(S_IFIFO): "p"
      case UInt32(S_IFSOCK): "s"
      default: "-"
      }
    var text = String(type)
    let letters: [Character] = ["r", "w", "x"]
    for bit in (0..<9).reversed() {
      text.append(mode & (1 << UInt32(bit)) != 0 ? letters[(8 - bit) % 3] : "-")
    }
    return text
  }
}
