//! One compute pipeline built by a Vulkan driver that reports what its compiler made of it:
//! `VK_KHR_pipeline_executable_properties`, with the pipeline created with
//! `CAPTURE_STATISTICS` (and `CAPTURE_INTERNAL_REPRESENTATIONS` for the assembly). Made
//! for Mesa's RADV on a null device (`RADV_FORCE_FAMILY`, no GPU needed), whose ACO
//! compiler is the one AMD's GPUs run under Linux; any driver with the extension works.

use std::ffi::{c_char, CStr, CString};

use ash::vk;

use super::spirv::EntrySpirv;

/// What the driver reported for one pipeline's executable.
#[derive(Debug, Clone, Default)]
pub struct Executable {
    /// Every statistic the driver gave, by its name ("VGPRs", "Spilled VGPRs", ...).
    pub stats: Vec<(String, f64)>,
    /// The internal representations, by name ("Assembly", "ACO IR", ...), where asked.
    pub representations: Vec<(String, String)>,
}

impl Executable {
    /// The statistic named `name`, if the driver gave it.
    pub fn stat(&self, name: &str) -> Option<f64> {
        self.stats.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }
}

fn c_text(chars: &[c_char]) -> String {
    // SAFETY: the driver writes NUL-terminated strings into these fixed arrays.
    unsafe { CStr::from_ptr(chars.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

fn vk_err(what: &str) -> impl Fn(vk::Result) -> String + '_ {
    move |e| format!("{what}: {e}")
}

/// A device of the first physical device the loader lists (set `VK_ICD_FILENAMES` to
/// choose the driver), with 64-bit integers and the executable-properties extension.
pub struct Compiler {
    _entry: ash::Entry,
    instance: ash::Instance,
    device: ash::Device,
    props: ash::khr::pipeline_executable_properties::Device,
    name: String,
    driver: String,
}

impl Compiler {
    pub fn new() -> Result<Compiler, String> {
        // SAFETY: loading the system's Vulkan loader.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| format!("Vulkan loader: {e}"))?;
        let app = vk::ApplicationInfo::default()
            .application_name(c"gpu-msm compiler_report")
            .api_version(vk::API_VERSION_1_3);
        // SAFETY: valid create info; every handle made here is destroyed in Drop.
        let instance = unsafe {
            entry.create_instance(
                &vk::InstanceCreateInfo::default().application_info(&app),
                None,
            )
        }
        .map_err(vk_err("vkCreateInstance"))?;
        let physical = unsafe { instance.enumerate_physical_devices() }
            .map_err(vk_err("vkEnumeratePhysicalDevices"))?;
        let Some(&physical) = physical.first() else {
            return Err("no Vulkan physical device (is VK_ICD_FILENAMES right?)".into());
        };
        let mut driver = vk::PhysicalDeviceDriverProperties::default();
        let mut properties = vk::PhysicalDeviceProperties2::default().push_next(&mut driver);
        unsafe { instance.get_physical_device_properties2(physical, &mut properties) };
        let name = c_text(&properties.properties.device_name);
        let driver = format!(
            "{} {}",
            c_text(&driver.driver_name),
            c_text(&driver.driver_info)
        );
        let family = unsafe { instance.get_physical_device_queue_family_properties(physical) }
            .iter()
            .position(|q| q.queue_flags.contains(vk::QueueFlags::COMPUTE))
            .ok_or("no compute queue")? as u32;
        let priorities = [1.0];
        let queues = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(family)
            .queue_priorities(&priorities)];
        let extensions = [ash::khr::pipeline_executable_properties::NAME.as_ptr()];
        let features = vk::PhysicalDeviceFeatures::default().shader_int64(true);
        let mut exec = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default()
            .pipeline_executable_info(true);
        let mut v13 = vk::PhysicalDeviceVulkan13Features::default()
            .shader_zero_initialize_workgroup_memory(true);
        let info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queues)
            .enabled_extension_names(&extensions)
            .enabled_features(&features)
            .push_next(&mut exec)
            .push_next(&mut v13);
        let device = unsafe { instance.create_device(physical, &info, None) }
            .map_err(vk_err("vkCreateDevice"))?;
        let props = ash::khr::pipeline_executable_properties::Device::new(&instance, &device);
        Ok(Compiler {
            _entry: entry,
            instance,
            device,
            props,
            name,
            driver,
        })
    }

    /// The device's name as the driver gives it.
    pub fn device_name(&self) -> &str {
        &self.name
    }

    /// The driver and its version (`radv Mesa 22.3.6`).
    pub fn driver(&self) -> &str {
        &self.driver
    }

    /// Builds `entry` of `spirv` into a compute pipeline and reads its executables'
    /// statistics (and internal representations where `representations`).
    pub fn compile(
        &self,
        spirv: &EntrySpirv,
        entry: &str,
        representations: bool,
    ) -> Result<Vec<Executable>, String> {
        let d = &self.device;
        let layout_bindings: Vec<vk::DescriptorSetLayoutBinding> = (spirv.bindings.iter())
            .map(|b| {
                vk::DescriptorSetLayoutBinding::default()
                    .binding(b.number)
                    .descriptor_type(match b.uniform {
                        true => vk::DescriptorType::UNIFORM_BUFFER,
                        false => vk::DescriptorType::STORAGE_BUFFER,
                    })
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE)
            })
            .collect();
        // SAFETY: every create info below is valid for the device; each object is
        // destroyed before returning.
        unsafe {
            let set = d
                .create_descriptor_set_layout(
                    &vk::DescriptorSetLayoutCreateInfo::default().bindings(&layout_bindings),
                    None,
                )
                .map_err(vk_err("vkCreateDescriptorSetLayout"))?;
            let sets = [set];
            let layout = d
                .create_pipeline_layout(
                    &vk::PipelineLayoutCreateInfo::default().set_layouts(&sets),
                    None,
                )
                .map_err(vk_err("vkCreatePipelineLayout"))?;
            let module = d
                .create_shader_module(
                    &vk::ShaderModuleCreateInfo::default().code(&spirv.words),
                    None,
                )
                .map_err(vk_err("vkCreateShaderModule"))?;
            let name = CString::new(entry).map_err(|e| e.to_string())?;
            let mut flags = vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR;
            if representations {
                flags |= vk::PipelineCreateFlags::CAPTURE_INTERNAL_REPRESENTATIONS_KHR;
            }
            let info = vk::ComputePipelineCreateInfo::default()
                .flags(flags)
                .stage(
                    vk::PipelineShaderStageCreateInfo::default()
                        .stage(vk::ShaderStageFlags::COMPUTE)
                        .module(module)
                        .name(&name),
                )
                .layout(layout);
            let made = d.create_compute_pipelines(vk::PipelineCache::null(), &[info], None);
            let result = match made {
                Ok(p) => {
                    let out = self.executables(p[0], representations);
                    d.destroy_pipeline(p[0], None);
                    out
                }
                Err((_, e)) => Err(format!("vkCreateComputePipelines: {e}")),
            };
            d.destroy_shader_module(module, None);
            d.destroy_pipeline_layout(layout, None);
            d.destroy_descriptor_set_layout(set, None);
            result
        }
    }

    /// The statistics (and representations) of every executable of `pipeline`.
    unsafe fn executables(
        &self,
        pipeline: vk::Pipeline,
        representations: bool,
    ) -> Result<Vec<Executable>, String> {
        let info = vk::PipelineInfoKHR::default().pipeline(pipeline);
        let count = unsafe { self.props.get_pipeline_executable_properties(&info) }
            .map_err(vk_err("vkGetPipelineExecutablePropertiesKHR"))?
            .len();
        let mut out = Vec::new();
        for index in 0..count as u32 {
            let exe = vk::PipelineExecutableInfoKHR::default()
                .pipeline(pipeline)
                .executable_index(index);
            let stats = unsafe { self.props.get_pipeline_executable_statistics(&exe) }
                .map_err(vk_err("vkGetPipelineExecutableStatisticsKHR"))?;
            let stats = stats
                .iter()
                .map(|s| {
                    // SAFETY: the union's member is the one `format` names.
                    let v = unsafe {
                        match s.format {
                            vk::PipelineExecutableStatisticFormatKHR::BOOL32 => s.value.b32 as f64,
                            vk::PipelineExecutableStatisticFormatKHR::INT64 => s.value.i64 as f64,
                            vk::PipelineExecutableStatisticFormatKHR::UINT64 => s.value.u64 as f64,
                            _ => s.value.f64,
                        }
                    };
                    (c_text(&s.name), v)
                })
                .collect();
            let representations = match representations {
                true => unsafe { self.representations(&exe)? },
                false => Vec::new(),
            };
            out.push(Executable {
                stats,
                representations,
            });
        }
        Ok(out)
    }

    /// The internal representations of one executable, as text: the two-call idiom, then
    /// a third call with the buffers.
    unsafe fn representations(
        &self,
        exe: &vk::PipelineExecutableInfoKHR,
    ) -> Result<Vec<(String, String)>, String> {
        let f = self
            .props
            .fp()
            .get_pipeline_executable_internal_representations_khr;
        let h = self.device.handle();
        let mut count = 0u32;
        unsafe { f(h, exe, &mut count, std::ptr::null_mut()) }
            .result()
            .map_err(vk_err("internal representations (count)"))?;
        let mut reps =
            vec![vk::PipelineExecutableInternalRepresentationKHR::default(); count as usize];
        unsafe { f(h, exe, &mut count, reps.as_mut_ptr()) }
            .result()
            .map_err(vk_err("internal representations (sizes)"))?;
        let mut buffers: Vec<Vec<u8>> = reps.iter().map(|r| vec![0u8; r.data_size]).collect();
        for (r, buf) in reps.iter_mut().zip(buffers.iter_mut()) {
            r.p_data = buf.as_mut_ptr().cast();
        }
        unsafe { f(h, exe, &mut count, reps.as_mut_ptr()) }
            .result()
            .map_err(vk_err("internal representations (data)"))?;
        Ok(reps
            .iter()
            .zip(buffers)
            .map(|(r, buf)| {
                let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
                (
                    c_text(&r.name),
                    String::from_utf8_lossy(&buf[..end]).into_owned(),
                )
            })
            .collect())
    }
}

impl Drop for Compiler {
    fn drop(&mut self) {
        // SAFETY: nothing made from the device outlives a `compile` call.
        unsafe {
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}
