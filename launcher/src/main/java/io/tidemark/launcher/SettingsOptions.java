package io.tidemark.launcher;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import picocli.CommandLine.Option;

/**
 * {@code --config}, {@code --set} and {@code --pipeline}, accepted before and after any command name
 * ({@code tidemark --set a=1 stream --set b=2}): every command mixes these in, and the launcher
 * merges them from the root down.
 */
final class SettingsOptions {

    @Option(names = "--config", paramLabel = "FILE",
            description = "Settings file (java properties). Default: $TIDEMARK_CONFIG, else ./tidemark.properties if present.")
    Path configFile;

    @Option(names = "--set", paramLabel = "KEY=VALUE",
            description = "Override a setting (repeatable); wins over the file and TIDEMARK_* environment variables. 'tidemark --help' lists the keys.")
    List<String> overrides = new ArrayList<>();

    @Option(names = "--pipeline", paramLabel = "FILE",
            description = "The pipeline: a pipeline file (see docs/pipelines.md) or a shipped pipeline's name; the same as --set pipeline=FILE. "
                    + "Default: network.")
    String pipeline;
}
