# Reads the wall clock the ways Ruby backends commonly do, once per line on stdin: Time.now.to_f, to_r, round,
# strftime('%s%L') and Process.clock_gettime in milliseconds.
$stdout.sync = true
while $stdin.gets
  t = Time.now
  readings = [
    (t.to_f * 1000).to_i,
    (t.to_r * 1000).floor,
    (t.to_f * 1000).round,
    t.strftime('%s%L').to_i,
    Process.clock_gettime(Process::CLOCK_REALTIME, :millisecond)
  ]
  puts readings.join(' ')
end
