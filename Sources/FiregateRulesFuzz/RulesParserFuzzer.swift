import FiregateRules
import Foundation

// The security rules parser under libFuzzer. Built and run by scripts/fuzz-rules.sh:
//
//   swift build --product firegate-rules-fuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING
//   .build/debug/firegate-rules-fuzz Tests/FiregateRulesTests/FuzzCorpus -max_total_time=300
//
// Built plainly (as `swift build` does) it replays files instead: each path given, or every
// file of each folder given, through the same entry (RulesFuzzInput), and fails on a broken one.

#if FUZZING
/// libFuzzer's driver, entered from the executable's main (SwiftPM names it after the module,
/// so libFuzzer's own main stays out of the link).
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                         _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

@_cdecl("firegate_rules_fuzz_main")
public func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { data, size in rulesFuzzerTestOneInput(data, size) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func rulesFuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    precondition(RulesFuzzInput.run(bytes), "refused without an ERROR issue")
    return 0
}
#else
@main
struct RulesParserReplay {
    static func main() {
        var failed = 0, count = 0
        for argument in CommandLine.arguments.dropFirst() {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: argument, isDirectory: &isFolder) else { continue }
            let files = isFolder.boolValue
                ? ((try? FileManager.default.contentsOfDirectory(atPath: argument)) ?? []).sorted().map { argument + "/" + $0 } : [argument]
            for file in files {
                guard let data = FileManager.default.contents(atPath: file) else { continue }
                count += 1
                if !RulesFuzzInput.run([UInt8](data)) {
                    failed += 1
                    print("refused without an ERROR issue: \(file)")
                }
            }
        }
        print("\(count) inputs, \(failed) broken")
        exit(failed == 0 ? 0 : 1)
    }
}
#endif
