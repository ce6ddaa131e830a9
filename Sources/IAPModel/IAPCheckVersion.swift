/// iapcheck's version, written into every report, corpus case and shard summary (shards of different versions do
/// not merge).
public enum IAPCheckVersion {
    public static let current = "0.2.0"
}
