package io.tidemark.launcher;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;

import picocli.CommandLine;

/** "2026-12-03T21:00:00Z", "2026-12-03T22:00:00+01:00": an ISO-8601 instant with its zone. */
final class InstantConverter implements CommandLine.ITypeConverter<Instant> {
    @Override
    public Instant convert(String value) {
        try {
            return OffsetDateTime.parse(value.strip()).toInstant();
        } catch (DateTimeParseException e) {
            throw new CommandLine.TypeConversionException(
                    "'" + value + "' is not an ISO-8601 time with a zone; write it like 2026-12-03T21:00:00Z");
        }
    }
}
