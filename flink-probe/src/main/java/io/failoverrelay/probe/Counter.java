package io.failoverrelay.probe;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichFlatMapFunction;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.util.Collector;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Keyed counters: one count per key (the sequence number modulo the number of keys) in Flink keyed state, the state
 * a restore must bring back. Parallelism 1, so this one instance sees every key and keeps a plain mirror of the
 * counts; at each snapshot (checkpoint or savepoint, synchronously at the barrier) it writes that mirror to
 * {@code expected/<checkpoint id>}: what the snapshot holds, for the test to compare with what a restore brings back.
 * After a restore it reports each key's count as Flink restored it (the first time the key is seen) to
 * {@code run/restored}. Files are the only channel to the runner: the job runs in a MiniCluster of the same JVM, but
 * nothing here relies on sharing static fields with it. When {@code run/records} exists as the job opens, every
 * record's sequence number is appended to it, a line each, unbuffered, so a kill -9 loses none
 * that was counted: the records a failover test reads.
 *
 * <p>For a state of a chosen size (bench/flink_restore.py), {@code payloadBytes > 0} gives every key a second value,
 * a random byte array of that length (incompressible, so RocksDB and ForSt store it whole), written when a key is
 * first met without one; after a restore each key's payload is read back when the key is first seen, and a key
 * without it, or with another key's, fails the job. With {@code payloadBytes == 0} there is no such state. Times on
 * the one clock of the JVM ({@link System#nanoTime()}) go to the runner in files: {@code run/filled} once every key
 * has been seen in this run, {@code run/barriers/<id>} at each snapshot, and {@code run/completed/<id>} holds the
 * time its completion was notified.
 */
final class Counter extends RichFlatMapFunction<Long, Long> implements CheckpointedFunction, CheckpointListener {
    private final int keys;
    private final String expectedDir;
    private final String runDir;
    private final int payloadBytes;
    private transient ValueState<Long> count;
    private transient ValueState<byte[]> payload;
    private transient Map<Long, Long> mirror;
    private transient boolean restored;
    private transient long firstValue;
    private transient StringBuilder restoredReport;
    private transient int restoredKeys;
    private transient OutputStream records;

    Counter(int keys, String expectedDir, String runDir) {
        this(keys, expectedDir, runDir, 0);
    }

    Counter(int keys, String expectedDir, String runDir, int payloadBytes) {
        this.keys = keys;
        this.expectedDir = expectedDir;
        this.runDir = runDir;
        this.payloadBytes = payloadBytes;
    }

    @Override
    public void open(OpenContext context) throws IOException {
        count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
        if (payloadBytes > 0) {
            payload = getRuntimeContext().getState(
                    new ValueStateDescriptor<>("payload", PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO));
        }
        mirror = new TreeMap<>();
        firstValue = -1;
        restoredReport = new StringBuilder();
        Path recordsFile = Paths.get(runDir, "records");
        records = Files.exists(recordsFile) ? new FileOutputStream(recordsFile.toFile(), true) : null;
    }

    @Override
    public void initializeState(FunctionInitializationContext context) {
        restored = context.isRestored();
    }

    @Override
    public void flatMap(Long value, Collector<Long> out) throws Exception {
        long key = value % keys;
        Long current = count.value();
        long before = current == null ? 0 : current;
        if (firstValue < 0) {
            firstValue = value;
        }
        boolean firstSeen = !mirror.containsKey(key);
        if (firstSeen && payload != null) {
            fillPayload(key);
        }
        if (firstSeen && restored) {
            restoredReport.append(key).append(' ').append(before).append('\n');
            if (++restoredKeys == keys) {
                write(Paths.get(runDir, "restored"), "first " + firstValue + "\n" + restoredReport);
            }
        }
        count.update(before + 1);
        mirror.put(key, before + 1);
        if (firstSeen && mirror.size() == keys) {
            write(Paths.get(runDir, "filled"), System.nanoTime() + "\n");
        }
        if (records != null) {
            records.write((value + "\n").getBytes(StandardCharsets.US_ASCII));
        }
        out.collect(value);
    }

    @Override
    public void snapshotState(FunctionSnapshotContext context) throws Exception {
        long id = context.getCheckpointId();
        if (Files.exists(Paths.get(runDir, "block"))) {
            // The runner asked for a crash inside this checkpoint: say so and hold the barrier until kill -9.
            write(Paths.get(runDir, "blocking"), id + "\n");
            Thread.sleep(Long.MAX_VALUE);
        }
        write(Paths.get(runDir, "barriers", Long.toString(id)), System.nanoTime() + "\n");
        StringBuilder text = new StringBuilder();
        text.append("complete ").append(!restored || mirror.size() == keys).append('\n');
        for (Map.Entry<Long, Long> entry : mirror.entrySet()) {
            text.append(entry.getKey()).append(' ').append(entry.getValue()).append('\n');
        }
        write(Paths.get(expectedDir, Long.toString(id)), text.toString());
    }

    @Override
    public void notifyCheckpointComplete(long checkpointId) throws IOException {
        write(Paths.get(runDir, "completed", Long.toString(checkpointId)), System.nanoTime() + "\n");
    }

    /**
     * The key's payload: checked when the state has one (the key's number in its first 8 bytes, its length), written
     * when it has none; after a restore every key must have one.
     */
    private void fillPayload(long key) throws IOException {
        byte[] held = payload.value();
        if (held != null) {
            if (held.length != payloadBytes || ByteBuffer.wrap(held).getLong() != key) {
                throw new IllegalStateException("key " + key + ": a payload of " + held.length + " bytes for key "
                        + (held.length >= 8 ? ByteBuffer.wrap(held).getLong() : -1));
            }
            return;
        }
        if (restored) {
            throw new IllegalStateException("key " + key + " was restored without its payload");
        }
        byte[] bytes = new byte[payloadBytes];
        ThreadLocalRandom.current().nextBytes(bytes);
        if (payloadBytes >= 8) {
            ByteBuffer.wrap(bytes).putLong(key);
        }
        payload.update(bytes);
    }

    /** Written whole under a temporary name and renamed, so a reader never sees half a file. */
    static void write(Path path, String text) throws IOException {
        Files.createDirectories(path.getParent());
        Path partial = path.resolveSibling(path.getFileName() + ".partial");
        Files.write(partial, text.getBytes(StandardCharsets.UTF_8));
        Files.move(partial, path, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }
}
