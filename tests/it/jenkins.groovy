// Runs a declarative Jenkinsfile with stand-ins for Jenkins' sections and steps, far enough
// to test a Jenkinsfile where no Jenkins runs. Groovy 2.4 (Jenkins' own version) parses it;
// every section and step it uses must be one known here, or the run fails; `when` is
// evaluated; `sh` runs its script as Jenkins does (`sh -xe`, or its #! line) in the
// workspace, with the node's environment, the parameters and the `environment` section;
// and the result follows Jenkins' rules: it only ever gets worse, `unstable` makes it
// UNSTABLE, `error` or a failed step FAILURE, and `junit` UNSTABLE when a case failed.
//
//   groovy jenkins.groovy JENKINSFILE [--param NAME=VALUE]... [NAME=VALUE]...
//
// The process's WORKSPACE is the workspace (and the current directory); NODE_NAME,
// CHANGE_ID, CHANGE_TARGET and CHANGE_FORK are read from the process's environment as a
// multibranch job sets them. A bare NAME=VALUE wins over the pipeline's `environment`
// section (a test's sandbox paths). Each section and step says what it did on a line
// starting "[jenkins] "; the last one is "[jenkins] result: SUCCESS|UNSTABLE|FAILURE".
// Exit status: 0 when the Jenkinsfile ran to its end (whatever its result), 2 when it
// does not parse or uses something this runner does not know.

import java.nio.file.Files

/** The `error` step, or a step that failed: the stage fails. */
class StepFailure extends RuntimeException {
    StepFailure(String message) { super(message) }
}

class Build {
    static final List<String> ORDER = ['SUCCESS', 'UNSTABLE', 'FAILURE']
    String result = 'SUCCESS'
    Map<String, String> env = [:]
    Map<String, String> params = [:]
    File cwd
    List<String> locks = []

    void worsen(String r) {
        if (ORDER.indexOf(r) > ORDER.indexOf(result)) { result = r }
    }

    static void say(String s) { println "[jenkins] $s"; System.out.flush() }

    /** Runs `c` with `delegate` answering its calls first. */
    static Object run(Closure c, Object delegate) {
        Closure body = (Closure) c.clone()
        body.delegate = delegate
        body.resolveStrategy = Closure.DELEGATE_FIRST
        body.call()
    }
}

/** `env` in a Jenkinsfile: the build's variables, read and set as properties. */
class EnvView {
    Build build
    def propertyMissing(String name) { build.env[name] }
    def propertyMissing(String name, Object value) { build.env[name] = value?.toString() }
}

/** The top level of `pipeline { }`: each section is kept, to run in Jenkins' order. */
class PipelineSections {
    Map<String, Closure> sections = [:]
    void agent(Closure c) { sections.agent = c }
    void options(Closure c) { sections.options = c }
    void parameters(Closure c) { sections.parameters = c }
    void environment(Closure c) { sections.environment = c }
    void stages(Closure c) { sections.stages = c }
    void post(Closure c) { sections.post = c }
}

class AgentSection {
    void label(String l) { Build.say("agent: label $l") }
}

class OptionsSection {
    void timeout(Map m) { Build.say("option: timeout $m") }
    void skipDefaultCheckout() { Build.say('option: skipDefaultCheckout') }
}

class ParametersSection {
    Build build
    void string(Map m) {
        if (!build.params.containsKey(m.name)) { build.params[m.name] = m.defaultValue ?: '' }
    }
}

/** `environment { NAME = value }`: values set as properties, `env` and `params` readable. */
class EnvironmentSection {
    Build build
    Map<String, String> values = [:]
    def getEnv() { new EnvView(build: build) }
    def getParams() { build.params }
    def propertyMissing(String name, Object value) { values[name] = value?.toString() }
    def propertyMissing(String name) { values[name] }
}

class StagesSection {
    List<List> stages = []
    void stage(String name, Closure c) { stages << [name, c] }
}

class StageSections {
    Map<String, Closure> sections = [:]
    void when(Closure c) { sections.when = c }
    void steps(Closure c) { sections.steps = c }
}

/** `when { }`: each condition adds its truth; the section holds when all of them do. */
class WhenConditions {
    Build build
    List<Boolean> results = []
    def getEnv() { new EnvView(build: build) }
    def getParams() { build.params }

    private List<Boolean> nested(Closure c) {
        WhenConditions inner = new WhenConditions(build: build)
        Build.run(c, inner)
        inner.results
    }
    void anyOf(Closure c) { results << nested(c).any() }
    void allOf(Closure c) { results << nested(c).every() }
    void not(Closure c) { results << !nested(c).every() }
    void changeRequest() { results << (build.env.CHANGE_ID != null) }
    void branch(String pattern) { results << (build.env.BRANCH_NAME == pattern) }
    void expression(Closure c) {
        Closure body = (Closure) c.clone()
        body.delegate = new StepCalls(build: build)
        body.resolveStrategy = Closure.DELEGATE_FIRST
        results << (body.call() as boolean)
    }
}

/** The steps: what `steps { }`, `script { }` and `post` sections may call. */
class StepCalls {
    Build build
    def getEnv() { new EnvView(build: build) }
    def getParams() { build.params }
    def getScm() { 'scm' }

    void script(Closure c) { Build.run(c, this) }
    void echo(String s) { Build.say("echo: $s") }

    void dir(String path, Closure c) {
        File before = build.cwd
        build.cwd = new File(before, path)
        build.cwd.mkdirs()
        try { Build.run(c, this) } finally { build.cwd = before }
    }

    void checkout(Object what) {
        // The test lays the checkout out itself, as the multibranch job would.
        Build.say("checkout: $what in $build.cwd.path")
    }

    void lock(Map args, Closure c) {
        String resource = args.resource
        if (resource == null || build.locks.contains(resource)) {
            throw new IllegalStateException("lock $args: no resource, or already held")
        }
        build.locks << resource
        Build.say("lock: $resource")
        try { Build.run(c, this) } finally {
            build.locks.remove(resource)
            Build.say("unlock: $resource")
        }
    }

    Object sh(Map args) {
        String script = args.script
        File file = File.createTempFile('jenkins-sh-', '.sh')
        file.deleteOnExit()
        file.text = script
        List<String> command = ['sh', '-xe', file.path]
        if (script.startsWith('#!')) {
            file.setExecutable(true)
            command = [file.path]
        }
        Build.say("sh${args.label ? ' (' + args.label + ')' : ''} in $build.cwd.path")
        ProcessBuilder pb = new ProcessBuilder(command).directory(build.cwd).inheritIO()
        pb.environment().clear()
        pb.environment().putAll(build.env.findAll { k, v -> v != null })
        int status = pb.start().waitFor()
        Build.say("sh: exit status $status")
        if (args.returnStatus) { return status }
        if (status != 0) { throw new StepFailure("script returned exit code $status") }
        null
    }
    Object sh(String script) { sh(script: script) }

    void unstable(String message) {
        Build.say("unstable: $message")
        build.worsen('UNSTABLE')
    }

    void error(String message) { throw new StepFailure(message) }

    void junit(Map args) {
        File file = new File(build.cwd, (String) args.testResults)
        if (!file.isFile()) {
            Build.say("junit: no $args.testResults")
            if (!args.allowEmptyResults) { throw new StepFailure('No test report files were found') }
            return
        }
        def cases = new XmlSlurper().parse(file).'**'.findAll { it.name() == 'testcase' }
        int failed = cases.count { it.failure.size() + it.error.size() > 0 }
        Build.say("junit: $args.testResults, ${cases.size()} case(s), $failed failed")
        if (failed > 0) { build.worsen('UNSTABLE') }
    }

    void archiveArtifacts(Map args) {
        String pattern = args.artifacts
        if (!pattern.endsWith('/**')) {
            throw new IllegalStateException("archiveArtifacts: this runner knows only DIR/**, not $pattern")
        }
        File dir = new File(build.cwd, pattern[0..-4])
        List<String> files = []
        if (dir.isDirectory()) {
            // Files.walk follows no link; Jenkins follows them unless followSymlinks: false.
            def paths = Files.walk(dir.toPath())
            try {
                paths.iterator().each { p ->
                    if (Files.isSymbolicLink(p) && args.followSymlinks != false) {
                        throw new IllegalStateException("archiveArtifacts would follow the link $p")
                    }
                    if (Files.isRegularFile(p, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                        files << dir.toPath().relativize(p).toString()
                    }
                }
            } finally {
                paths.close()
            }
        }
        Build.say("archiveArtifacts: $pattern, ${files.size()} file(s), followSymlinks ${args.followSymlinks}")
        if (files.isEmpty() && !args.allowEmptyArchive) { throw new StepFailure('No artifacts found') }
    }
}

class PostConditions {
    Map<String, Closure> blocks = [:]
    void always(Closure c) { blocks.always = c }
    void success(Closure c) { blocks.success = c }
    void unstable(Closure c) { blocks.unstable = c }
    void failure(Closure c) { blocks.failure = c }
    void cleanup(Closure c) { blocks.cleanup = c }
}

/** Runs `c` as steps; a failed step fails the build, and says why. */
void runSteps(Build build, Closure c, String where) {
    try {
        Build.run(c, new StepCalls(build: build))
    } catch (StepFailure e) {
        Build.say("$where failed: $e.message")
        build.worsen('FAILURE')
    }
}

void runPipeline(Build build, Closure pipeline) {
    PipelineSections top = new PipelineSections()
    Build.run(pipeline, top)
    if (top.sections.agent) { Build.run(top.sections.agent, new AgentSection()) }
    if (top.sections.options) { Build.run(top.sections.options, new OptionsSection()) }
    if (top.sections.parameters) { Build.run(top.sections.parameters, new ParametersSection(build: build)) }
    build.params.each { k, v -> build.env[k] = v }  // parameters are variables too
    if (top.sections.environment) {
        EnvironmentSection e = new EnvironmentSection(build: build)
        Build.run(top.sections.environment, e)
        e.values.each { k, v -> if (!overrides.containsKey(k)) { build.env[k] = v } }
    }
    StagesSection stages = new StagesSection()
    Build.run(top.sections.stages, stages)
    stages.stages.each { stage ->
        def (String name, Closure body) = stage
        StageSections s = new StageSections()
        Build.run(body, s)
        if (s.sections.when) {
            WhenConditions w = new WhenConditions(build: build)
            Build.run(s.sections.when, w)
            if (!w.results.every()) {
                Build.say("stage $name: skipped (when)")
                return
            }
        }
        Build.say("stage $name")
        if (build.result != 'FAILURE') { runSteps(build, s.sections.steps, "stage $name") }
    }
    if (top.sections.post) {
        PostConditions post = new PostConditions()
        Build.run(top.sections.post, post)
        String byResult = build.result.toLowerCase()
        ['always', byResult, 'cleanup'].each { k ->
            if (post.blocks[k]) { runSteps(build, post.blocks[k], "post $k") }
        }
    }
}

def argv = args as List
if (argv.isEmpty()) {
    System.err.println('usage: groovy jenkins.groovy JENKINSFILE [--param NAME=VALUE]... [NAME=VALUE]...')
    System.exit(2)
}
File jenkinsfile = new File(argv[0])
Build build = new Build()
build.env.putAll(System.getenv())
build.cwd = new File(System.getenv('WORKSPACE') ?: '.')
overrides = [:]
for (int i = 1; i < argv.size(); i++) {
    if (argv[i] == '--param') {
        def (k, v) = argv[++i].split('=', 2)
        build.params[k] = v
    } else {
        def (k, v) = argv[i].split('=', 2)
        overrides[k] = v
    }
}
build.env.putAll(overrides)

Script script
try {
    script = new GroovyShell().parse(jenkinsfile)
} catch (org.codehaus.groovy.control.CompilationFailedException e) {
    System.err.println("${jenkinsfile}: does not parse: ${e.message}")
    System.exit(2)
}
Build.say("parsed $jenkinsfile.path")
script.binding.setVariable('pipeline', { Closure c -> runPipeline(build, c) })
try {
    script.run()
} catch (MissingMethodException | MissingPropertyException | IllegalStateException e) {
    System.err.println("${jenkinsfile}: uses what this runner does not know: ${e.message}")
    System.exit(2)
}
Build.say("result: $build.result")
