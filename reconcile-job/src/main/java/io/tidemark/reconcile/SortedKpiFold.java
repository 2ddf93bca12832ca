package io.tidemark.reconcile;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.sql.Date;
import java.sql.Timestamp;
import java.util.Iterator;
import java.util.NoSuchElementException;

import org.apache.datasketches.hll.HllSketch;
import org.apache.datasketches.hll.TgtHllType;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.StructType;

import io.tidemark.lakehouse.KpiComputation;

/**
 * Folds records sorted by (window_start, cell_site_id, subscriber_id) into one exact KPI row per
 * (window, cell): record count, exact volume, distinct subscribers (each change of subscriber in the
 * sorted run), the sketch of those subscribers fed once each in that order (as
 * {@code hll_sketch_agg(subscriber_id, 12)} would build it: HLL_8, the string's UTF-8 bytes), the
 * newest ingest time and the number of late records.
 *
 * <p>Input columns: event_date, window_start, window_end, cell_site_id, subscriber_id, volume_gb (as
 * {@link KpiComputation#VOLUME_TYPE}), ingest_ts, is_late.
 */
final class SortedKpiFold implements MapPartitionsFunction<Row, Row> {
    private static final long serialVersionUID = 1L;

    static final StructType OUTPUT = new StructType()
            .add("event_date", DataTypes.DateType, false)
            .add("window_start", DataTypes.TimestampType, false)
            .add("window_end", DataTypes.TimestampType, false)
            .add("cell_site_id", DataTypes.StringType, false)
            .add("record_count", DataTypes.LongType, false)
            .add("total_gb", DecimalType.apply(38, 9), false)
            .add("subscribers", DataTypes.LongType, false)
            .add("subscriber_sketch", DataTypes.BinaryType, false)
            .add("is_final", DataTypes.BooleanType, false)
            .add("source", DataTypes.StringType, false)
            .add("updated_at", DataTypes.TimestampType, false)
            .add("late_records", DataTypes.LongType, false);

    @Override
    public Iterator<Row> call(Iterator<Row> sorted) {
        return new Iterator<>() {
            private Row pending = sorted.hasNext() ? sorted.next() : null;

            @Override
            public boolean hasNext() {
                return pending != null;
            }

            @Override
            public Row next() {
                if (pending == null) {
                    throw new NoSuchElementException();
                }
                Row first = pending;
                Timestamp start = first.getTimestamp(1);
                String cell = first.getString(3);
                long records = 0;
                long subscribers = 0;
                long late = 0;
                BigDecimal total = BigDecimal.ZERO.setScale(9);
                Timestamp updated = null;
                String subscriber = null;
                HllSketch sketch = new HllSketch(KpiComputation.SKETCH_LG_K, TgtHllType.HLL_8);
                Row r = first;
                while (r != null && r.getTimestamp(1).equals(start) && r.getString(3).equals(cell)) {
                    records++;
                    total = total.add(r.getDecimal(5));
                    Timestamp ingest = r.getTimestamp(6);
                    if (updated == null || ingest.after(updated)) {
                        updated = ingest;
                    }
                    if (r.getBoolean(7)) {
                        late++;
                    }
                    String s = r.getString(4);
                    if (!s.equals(subscriber)) {
                        subscribers++;
                        sketch.update(s.getBytes(StandardCharsets.UTF_8));
                        subscriber = s;
                    }
                    r = sorted.hasNext() ? sorted.next() : null;
                }
                pending = r;
                Date day = first.getDate(0);
                return RowFactory.create(day, start, first.getTimestamp(2), cell, records, total, subscribers,
                        sketch.toUpdatableByteArray(), true, "batch", updated, late);
            }
        };
    }
}
