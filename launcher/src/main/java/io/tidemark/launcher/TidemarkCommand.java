package io.tidemark.launcher;

import java.io.PrintWriter;
import java.util.LinkedList;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

import org.apache.spark.sql.SparkSession;

import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

import io.tidemark.lakehouse.TidemarkConfig;

/** What every subcommand shares: its output stream and the configuration of the root command. */
abstract class TidemarkCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    SettingsOptions settings = new SettingsOptions();

    PrintWriter out() {
        return spec.commandLine().getOut();
    }

    PrintWriter err() {
        return spec.commandLine().getErr();
    }

    Tidemark root() {
        return (Tidemark) spec.root().userObject();
    }

    /** Settings with this command's own flags (dotted keys, null = not given) applied last. */
    TidemarkConfig config(Map<String, String> flags) {
        LinkedList<SettingsOptions> chain = new LinkedList<>();
        for (CommandSpec s = spec; s != null; s = s.parent()) {
            if (s.userObject() instanceof TidemarkCommand c) {
                chain.addFirst(c.settings);
            } else if (s.userObject() instanceof Tidemark t) {
                chain.addFirst(t.settings);
            }
        }
        return root().config(chain, flags);
    }

    TidemarkConfig config() {
        return config(Map.of());
    }

    /** The command's Spark session ({@link Tidemark.Sessions}); give it back with {@link #release}. */
    SparkSession spark(TidemarkConfig config, String appName) {
        return root().sessions.open(config, appName);
    }

    void release(SparkSession spark) {
        root().sessions.release(spark);
    }

    /** A progress line, flushed at once (commands run for minutes). */
    void say(String format, Object... args) {
        out().println(args.length == 0 ? format : String.format(Locale.ROOT, format, args));
        out().flush();
    }
}
