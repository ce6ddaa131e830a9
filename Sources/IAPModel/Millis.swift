/// UNIX epoch milliseconds (UTC), the unit of every date in Apple's payloads.
public typealias Millis = Int64
