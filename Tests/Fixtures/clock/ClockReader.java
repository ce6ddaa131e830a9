// Reads the wall clock the ways JVM backends commonly do, once per line on stdin: System.currentTimeMillis(),
// Instant.now(), Clock.systemUTC() and ZonedDateTime.now(). Run as a source file: java ClockReader.java
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Clock;
import java.time.Instant;
import java.time.ZonedDateTime;

public class ClockReader {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        while (in.readLine() != null) {
            long millis = System.currentTimeMillis();
            long instant = Instant.now().toEpochMilli();
            long clock = Clock.systemUTC().millis();
            long zoned = ZonedDateTime.now().toInstant().toEpochMilli();
            System.out.println(millis + " " + instant + " " + clock + " " + zoned);
            System.out.flush();
        }
    }
}
