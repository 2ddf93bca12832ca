package io.tidemark.launcher;

import java.time.Duration;

import picocli.CommandLine;

import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.pipeline.Durations;

/** "30s", "5 minutes", "2h", "PT5M": the same duration syntax as the settings. */
final class DurationConverter implements CommandLine.ITypeConverter<Duration> {
    @Override
    public Duration convert(String value) {
        try {
            return Durations.parse(value);
        } catch (RuntimeException e) {
            throw new CommandLine.TypeConversionException(e.getMessage());
        }
    }
}
