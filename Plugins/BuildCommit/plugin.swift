import Foundation
import PackagePlugin

/// Writes `BuildCommit.swift`, `let iapReconcileCommit = "<commit>"`, with the commit the build
/// was made from (`git rev-parse`), so that `iap-reconcile --version` says which code it is.
/// Outside a git checkout (a source tarball) the commit is "unknown". The file is rewritten only
/// when the commit changed, so an unchanged checkout compiles nothing again.
@main
struct BuildCommit: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let out = context.pluginWorkDirectoryURL.appending(path: "generated")
        let script = """
            mkdir -p "$2"
            c=$(git -C "$1" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
            line="let iapReconcileCommit = \\"$c\\""
            [ "$(cat "$2/BuildCommit.swift" 2>/dev/null)" = "$line" ] || printf '%s\\n' "$line" > "$2/BuildCommit.swift"
            """
        return [.prebuildCommand(displayName: "The build's commit", executable: URL(fileURLWithPath: "/bin/sh"),
                                 arguments: ["-c", script, "sh", context.package.directoryURL.path, out.path],
                                 outputFilesDirectory: out)]
    }
}
